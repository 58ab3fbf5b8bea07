//! The MCP hosts ctx configures: where each one reads its server list, per scope
//! and operating system, and the shape of one server entry. Every location and
//! shape is the one the host documents (source URLs beside each); the path logic is
//! a pure function of the OS and the environment, so all three OSes are tested on
//! any of them.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use ctx_core::error::{Error, Result};

/// The MCP hosts ctx knows how to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Host {
    /// Claude Code: `.mcp.json` (project, shared through git) or `~/.claude.json` (user).
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json` in the OS's application-data folder (user).
    ClaudeDesktop,
    /// Cursor: `.cursor/mcp.json` (project) or `~/.cursor/mcp.json` (user).
    Cursor,
    /// VS Code: `.vscode/mcp.json` (project) or `mcp.json` in the user profile (user).
    #[value(name = "vscode", alias = "vs-code")]
    VsCode,
    /// Codex: `.codex/config.toml` (project, trusted projects only) or `~/.codex/config.toml` (user).
    Codex,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json` (user).
    Windsurf,
    /// Zed: `.zed/settings.json` (project) or Zed's `settings.json` (user). Zed reads no MCP
    /// resources: every ctx feature is also a tool.
    Zed,
    /// Gemini CLI: `.gemini/settings.json` (project) or `~/.gemini/settings.json` (user).
    #[value(name = "gemini-cli", alias = "gemini")]
    GeminiCli,
    /// GitHub Copilot CLI: `.github/mcp.json` (project) or `~/.copilot/mcp-config.json` (user).
    #[value(name = "copilot-cli", alias = "copilot")]
    CopilotCli,
}

/// Which of a host's files: the project's (shared with everyone who clones the
/// repository) or the user's (this machine only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    Project,
    User,
}

/// How a host's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Strict JSON (RFC 8259): no comments, no trailing commas.
    Json,
    /// JSON with `//` and `/* */` comments, no trailing commas (Gemini CLI strips comments).
    JsonComments,
    /// JSON with comments and trailing commas (VS Code, Zed).
    Jsonc,
    /// TOML (Codex).
    Toml,
}

/// The operating systems whose folders differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    Mac,
    Windows,
}

impl Os {
    /// The OS this binary runs on (other Unixes use the Linux folders).
    pub fn current() -> Os {
        if cfg!(windows) {
            Os::Windows
        } else if cfg!(target_os = "macos") {
            Os::Mac
        } else {
            Os::Linux
        }
    }
}

/// The environment variables host locations depend on (empty counts as unset).
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `HOME` (`USERPROFILE` on Windows).
    pub home: Option<PathBuf>,
    /// `APPDATA` (Windows).
    pub appdata: Option<PathBuf>,
    /// `XDG_CONFIG_HOME` (Linux; a relative value is ignored, as the XDG spec says).
    pub xdg_config_home: Option<PathBuf>,
    /// `CODEX_HOME` (Codex's folder, default `~/.codex`).
    pub codex_home: Option<PathBuf>,
    /// `COPILOT_HOME` (Copilot CLI's folder, default `~/.copilot`).
    pub copilot_home: Option<PathBuf>,
}

impl Env {
    /// This process's environment, read as `os` names its variables.
    pub fn from_process(os: Os) -> Env {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Env {
            home: var(if os == Os::Windows {
                "USERPROFILE"
            } else {
                "HOME"
            }),
            appdata: var("APPDATA"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            codex_home: var("CODEX_HOME"),
            copilot_home: var("COPILOT_HOME"),
        }
    }

    fn home(&self) -> Result<&Path> {
        absolute("HOME", self.home.as_deref())
    }

    fn appdata(&self) -> Result<&Path> {
        absolute("APPDATA", self.appdata.as_deref())
    }

    /// `$XDG_CONFIG_HOME` when absolute, else `~/.config`.
    fn xdg_config(&self) -> Result<PathBuf> {
        match self.xdg_config_home.as_deref().filter(|p| p.is_absolute()) {
            Some(p) => Ok(p.to_path_buf()),
            None => Ok(self.home()?.join(".config")),
        }
    }

    /// `var` when set (it must then be absolute), else `~/<folder>`.
    fn home_override(&self, name: &str, var: Option<&Path>, folder: &str) -> Result<PathBuf> {
        match var {
            Some(_) => Ok(absolute(name, var)?.to_path_buf()),
            None => Ok(self.home()?.join(folder)),
        }
    }
}

/// An environment variable that must name an absolute folder: unset or relative is
/// an error naming it, never a guess.
fn absolute<'a>(name: &str, value: Option<&'a Path>) -> Result<&'a Path> {
    match value {
        Some(p) if p.is_absolute() => Ok(p),
        Some(p) => Err(Error::Usage(format!(
            "{name} is `{}`, not an absolute folder; fix it or pass --file PATH",
            p.display()
        ))),
        None => Err(Error::Usage(format!(
            "{name} is not set, so the host's file cannot be found; pass --file PATH"
        ))),
    }
}

impl Host {
    #[cfg(test)]
    pub const ALL: [Host; 9] = [
        Host::ClaudeCode,
        Host::ClaudeDesktop,
        Host::Cursor,
        Host::VsCode,
        Host::Codex,
        Host::Windsurf,
        Host::Zed,
        Host::GeminiCli,
        Host::CopilotCli,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::ClaudeDesktop => "claude-desktop",
            Host::Cursor => "cursor",
            Host::VsCode => "vscode",
            Host::Codex => "codex",
            Host::Windsurf => "windsurf",
            Host::Zed => "zed",
            Host::GeminiCli => "gemini-cli",
            Host::CopilotCli => "copilot-cli",
        }
    }

    /// Whether the host reads a project-scope file (else it has only a user one).
    pub fn has_project_scope(self) -> bool {
        !matches!(self, Host::ClaudeDesktop | Host::Windsurf)
    }

    /// The scope used when none is given: the project's where the host has one.
    pub fn default_scope(self) -> Scope {
        if self.has_project_scope() {
            Scope::Project
        } else {
            Scope::User
        }
    }

    pub fn format(self) -> Format {
        match self {
            Host::Codex => Format::Toml,
            Host::VsCode | Host::Zed => Format::Jsonc,
            Host::GeminiCli => Format::JsonComments,
            _ => Format::Json,
        }
    }

    /// The key of the object that maps server names to entries (JSON hosts).
    pub fn servers_key(self) -> &'static str {
        match self {
            Host::VsCode => "servers",
            Host::Zed => "context_servers",
            Host::Codex => "mcp_servers",
            _ => "mcpServers",
        }
    }

    /// Whether the host expands `${workspaceFolder}` in a project file's arguments
    /// (else ctx finds the repository from the folder the host starts it in).
    pub fn expands_workspace_folder(self) -> bool {
        matches!(self, Host::VsCode | Host::Cursor)
    }

    /// The file the host reads for `scope`: `root` is the repository (the folder of
    /// `opencontext.yaml`).
    pub fn file(self, scope: Scope, root: &Path, os: Os, env: &Env) -> Result<PathBuf> {
        match scope {
            Scope::Project => self.project_file(root).ok_or_else(|| {
                Error::Usage(format!(
                    "{} has no project configuration, only a user one: use --scope user",
                    self.as_str()
                ))
            }),
            Scope::User => self.user_file(os, env),
        }
    }

    fn project_file(self, root: &Path) -> Option<PathBuf> {
        let rel: &[&str] = match self {
            // https://code.claude.com/docs/en/mcp (project scope: `.mcp.json`, checked into git)
            Host::ClaudeCode => &[".mcp.json"],
            // https://cursor.com/docs/context/mcp (`.cursor/mcp.json` in the project)
            Host::Cursor => &[".cursor", "mcp.json"],
            // https://code.visualstudio.com/docs/agents/reference/mcp-configuration
            Host::VsCode => &[".vscode", "mcp.json"],
            // https://developers.openai.com/codex/config-reference (project `.codex/config.toml`)
            Host::Codex => &[".codex", "config.toml"],
            // https://zed.dev/docs/configuring-zed (project settings `.zed/settings.json`)
            Host::Zed => &[".zed", "settings.json"],
            // https://geminicli.com/docs/cli/configuration (project `.gemini/settings.json`)
            Host::GeminiCli => &[".gemini", "settings.json"],
            // https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers
            // (`.github/mcp.json`: the file shared through the repository)
            Host::CopilotCli => &[".github", "mcp.json"],
            Host::ClaudeDesktop | Host::Windsurf => return None,
        };
        Some(rel.iter().fold(root.to_path_buf(), |p, c| p.join(c)))
    }

    /// The user-scope file on `os` with environment `env`.
    pub fn user_file(self, os: Os, env: &Env) -> Result<PathBuf> {
        let join = |base: PathBuf, rel: &[&str]| rel.iter().fold(base, |p, c| p.join(c));
        Ok(match self {
            // https://code.claude.com/docs/en/mcp (user scope: `~/.claude.json`)
            Host::ClaudeCode => env.home()?.join(".claude.json"),
            // https://modelcontextprotocol.io/docs/develop/connect-local-servers
            // (macOS `~/Library/Application Support/Claude/`, Windows `%APPDATA%\Claude\`)
            Host::ClaudeDesktop => {
                let file = ["Claude", "claude_desktop_config.json"];
                match os {
                    Os::Mac => join(
                        join(
                            env.home()?.to_path_buf(),
                            &["Library", "Application Support"],
                        ),
                        &file,
                    ),
                    Os::Windows => join(env.appdata()?.to_path_buf(), &file),
                    Os::Linux => join(env.xdg_config()?, &file),
                }
            }
            // https://cursor.com/docs/context/mcp (`~/.cursor/mcp.json`)
            Host::Cursor => join(env.home()?.to_path_buf(), &[".cursor", "mcp.json"]),
            // https://code.visualstudio.com/docs/configure/settings#_settings-json-file
            // (the user folder beside settings.json; `MCP: Open User Configuration`)
            Host::VsCode => {
                let file = ["Code", "User", "mcp.json"];
                match os {
                    Os::Mac => join(
                        join(
                            env.home()?.to_path_buf(),
                            &["Library", "Application Support"],
                        ),
                        &file,
                    ),
                    Os::Windows => join(env.appdata()?.to_path_buf(), &file),
                    Os::Linux => join(env.xdg_config()?, &file),
                }
            }
            // https://developers.openai.com/codex/config-reference (`$CODEX_HOME/config.toml`)
            Host::Codex => env
                .home_override("CODEX_HOME", env.codex_home.as_deref(), ".codex")?
                .join("config.toml"),
            // https://docs.windsurf.com/windsurf/cascade/mcp (`~/.codeium/windsurf/mcp_config.json`)
            Host::Windsurf => join(
                env.home()?.to_path_buf(),
                &[".codeium", "windsurf", "mcp_config.json"],
            ),
            // https://zed.dev/docs/configuring-zed (macOS and Linux `~/.config/zed/settings.json`,
            // `$XDG_CONFIG_HOME/zed` on Linux, Windows `%APPDATA%\Zed\settings.json`)
            Host::Zed => match os {
                Os::Mac => join(
                    env.home()?.to_path_buf(),
                    &[".config", "zed", "settings.json"],
                ),
                Os::Windows => join(env.appdata()?.to_path_buf(), &["Zed", "settings.json"]),
                Os::Linux => join(env.xdg_config()?, &["zed", "settings.json"]),
            },
            // https://geminicli.com/docs/cli/configuration (`~/.gemini/settings.json`)
            Host::GeminiCli => join(env.home()?.to_path_buf(), &[".gemini", "settings.json"]),
            // https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers
            // (`~/.copilot/mcp-config.json`, `$COPILOT_HOME` when set)
            Host::CopilotCli => env
                .home_override("COPILOT_HOME", env.copilot_home.as_deref(), ".copilot")?
                .join("mcp-config.json"),
        })
    }

    /// One server entry in the host's JSON shape (the TOML host builds its own table).
    pub fn entry(self, command: &str, args: &[String]) -> Value {
        match self {
            // Both document `"type": "stdio"` for a local process.
            Host::ClaudeCode | Host::VsCode => {
                json!({ "type": "stdio", "command": command, "args": args })
            }
            // Copilot CLI: `"type": "local"` and the tools it may call (`*`: all).
            Host::CopilotCli => json!({
                "type": "local", "command": command, "args": args, "tools": ["*"]
            }),
            _ => json!({ "command": command, "args": args }),
        }
    }

    /// A new file holding only `entry` under `name`.
    pub fn new_document(self, name: &str, entry: &Value) -> Value {
        let mut doc = json!({ self.servers_key(): { name: entry } });
        // What VS Code's `MCP: Add Server` writes: the servers and their (empty) inputs.
        if self == Host::VsCode {
            doc["inputs"] = json!([]);
        }
        doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: &str) -> Env {
        Env {
            home: Some(PathBuf::from(home)),
            ..Env::default()
        }
    }

    #[test]
    fn claude_desktop_lives_in_each_oses_application_data_folder() {
        let linux = Host::ClaudeDesktop
            .user_file(Os::Linux, &env("/home/me"))
            .unwrap();
        assert_eq!(
            linux,
            Path::new("/home/me/.config/Claude/claude_desktop_config.json")
        );
        let xdg = Env {
            xdg_config_home: Some("/xdg".into()),
            ..env("/home/me")
        };
        assert_eq!(
            Host::ClaudeDesktop.user_file(Os::Linux, &xdg).unwrap(),
            Path::new("/xdg/Claude/claude_desktop_config.json")
        );
        let relative_xdg = Env {
            xdg_config_home: Some("rel".into()),
            ..env("/home/me")
        };
        assert_eq!(
            Host::ClaudeDesktop
                .user_file(Os::Linux, &relative_xdg)
                .unwrap(),
            linux,
            "a relative XDG_CONFIG_HOME is ignored"
        );
        assert_eq!(
            Host::ClaudeDesktop
                .user_file(Os::Mac, &env("/Users/me"))
                .unwrap(),
            Path::new("/Users/me/Library/Application Support/Claude/claude_desktop_config.json")
        );
        // Windows: %APPDATA%, never $HOME/.config; built with this platform's joins.
        let appdata = PathBuf::from(if cfg!(windows) {
            r"C:\Users\me\AppData\Roaming"
        } else {
            "/c/Users/me/AppData/Roaming"
        });
        let win = Env {
            appdata: Some(appdata.clone()),
            ..env(if cfg!(windows) {
                r"C:\Users\me"
            } else {
                "/c/Users/me"
            })
        };
        let got = Host::ClaudeDesktop.user_file(Os::Windows, &win).unwrap();
        assert_eq!(
            got,
            appdata.join("Claude").join("claude_desktop_config.json")
        );
        assert!(!got.to_string_lossy().contains(".config"));
        let no_appdata = Host::ClaudeDesktop.user_file(Os::Windows, &env("/c/Users/me"));
        assert!(
            matches!(no_appdata, Err(Error::Usage(m)) if m.contains("APPDATA")),
            "no APPDATA is an error, not a guess"
        );
    }

    #[test]
    fn every_user_file_is_the_documented_one_on_each_os() {
        let home = env("/h");
        let win = Env {
            appdata: Some("/h/AppData/Roaming".into()),
            ..env("/h")
        };
        let want: [(Host, Os, &Env, &str); 13] = [
            (Host::ClaudeCode, Os::Linux, &home, "/h/.claude.json"),
            (Host::Cursor, Os::Mac, &home, "/h/.cursor/mcp.json"),
            (
                Host::VsCode,
                Os::Linux,
                &home,
                "/h/.config/Code/User/mcp.json",
            ),
            (
                Host::VsCode,
                Os::Mac,
                &home,
                "/h/Library/Application Support/Code/User/mcp.json",
            ),
            (
                Host::VsCode,
                Os::Windows,
                &win,
                "/h/AppData/Roaming/Code/User/mcp.json",
            ),
            (Host::Codex, Os::Windows, &win, "/h/.codex/config.toml"),
            (
                Host::Windsurf,
                Os::Windows,
                &win,
                "/h/.codeium/windsurf/mcp_config.json",
            ),
            (Host::Zed, Os::Linux, &home, "/h/.config/zed/settings.json"),
            (Host::Zed, Os::Mac, &home, "/h/.config/zed/settings.json"),
            (
                Host::Zed,
                Os::Windows,
                &win,
                "/h/AppData/Roaming/Zed/settings.json",
            ),
            (Host::GeminiCli, Os::Mac, &home, "/h/.gemini/settings.json"),
            (
                Host::CopilotCli,
                Os::Linux,
                &home,
                "/h/.copilot/mcp-config.json",
            ),
            (
                Host::ClaudeDesktop,
                Os::Windows,
                &win,
                "/h/AppData/Roaming/Claude/claude_desktop_config.json",
            ),
        ];
        for (host, os, env, path) in want {
            let got = host.user_file(os, env).unwrap();
            assert_eq!(got, Path::new(path), "{host:?} on {os:?}");
        }
    }

    #[test]
    fn host_homes_follow_their_variables_and_refuse_relative_ones() {
        let set = Env {
            codex_home: Some("/ch".into()),
            copilot_home: Some("/cp".into()),
            ..env("/h")
        };
        assert_eq!(
            Host::Codex.user_file(Os::Linux, &set).unwrap(),
            Path::new("/ch/config.toml")
        );
        assert_eq!(
            Host::CopilotCli.user_file(Os::Linux, &set).unwrap(),
            Path::new("/cp/mcp-config.json")
        );
        let relative = Env {
            codex_home: Some("codex".into()),
            ..env("/h")
        };
        let err = Host::Codex.user_file(Os::Linux, &relative).unwrap_err();
        assert!(err.to_string().contains("CODEX_HOME"), "{err}");
        let no_home = Host::Cursor.user_file(Os::Linux, &Env::default());
        assert!(matches!(no_home, Err(Error::Usage(m)) if m.contains("HOME")));
    }

    #[test]
    fn project_files_sit_in_the_repository_and_user_only_hosts_have_none() {
        let root = Path::new("/r");
        let e = Env::default();
        for host in Host::ALL {
            let got = host.file(Scope::Project, root, Os::Linux, &e);
            assert_eq!(got.is_ok(), host.has_project_scope(), "{host:?}");
            if let Ok(p) = got {
                assert!(p.starts_with(root), "{host:?}: {}", p.display());
            }
        }
        assert_eq!(
            Host::CopilotCli
                .file(Scope::Project, root, Os::Linux, &e)
                .unwrap(),
            Path::new("/r/.github/mcp.json")
        );
        assert_eq!(Host::Windsurf.default_scope(), Scope::User);
        assert_eq!(Host::Zed.default_scope(), Scope::Project);
    }
}
