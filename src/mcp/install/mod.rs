//! `ctx mcp install`: the entry that makes an MCP host start `ctx mcp` for this
//! repository, printed, shown as a unified diff, or merged into the host's file.
//!
//! - `hosts.rs`: each host's documented files (per scope and OS) and entry shape;
//! - `edit_json.rs`, `edit_toml.rs`: the entry merged into an existing file, every
//!   other byte kept; a file the host could not read is refused, never rewritten.
//!
//! A project file is shared through git, so it names no path of this machine: `ctx`
//! from `PATH`, and the repository found from the folder the host starts the server
//! in (or `${workspaceFolder}` where the host expands it). A user file names this
//! binary and the repository's absolute path. Every repository has its own entry
//! (`ctx-<manifest id>`); a different entry of that name is replaced only when asked.

mod edit_json;
mod edit_toml;
mod hosts;

use std::path::{Path, PathBuf};

use ctx_core::error::{Error, Result};
use ctx_core::view::Who;

pub use hosts::{Env, Format, Host, Os, Scope};

/// Host files larger than this are refused (`~/.claude.json` grows with history).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// How the host starts the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
}

/// What merging our entry does to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The entry is new.
    Added,
    /// The file already holds exactly our entry.
    Unchanged,
    /// A different entry of the same name would be replaced.
    Replaces,
}

/// A file's text after the merge, and what the merge did.
#[derive(Debug)]
pub struct Edited {
    pub text: String,
    pub outcome: Outcome,
}

/// The planned write of one host file.
#[derive(Debug)]
pub struct Plan {
    /// The file written (a symbolic link's target: the link itself is kept).
    pub file: PathBuf,
    /// Its text now; `None` when there is no file yet.
    pub before: Option<String>,
    pub after: String,
    pub outcome: Outcome,
}

/// The server's name in the host's list: 1-64 letters, digits, `-` or `_`.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "--name `{name}`: use 1-64 letters, digits, `-` or `_`"
        )))
    }
}

/// One entry per repository: `ctx-<manifest id>`.
pub fn default_name(manifest_id: &str) -> Result<String> {
    let name = format!("ctx-{manifest_id}");
    check_name(&name).map_err(|_| {
        Error::Usage(format!(
            "the manifest id `{manifest_id}` is too long for a server name: pass --name NAME"
        ))
    })?;
    Ok(name)
}

/// The consumer flags the entry carries: the consumer `resolved` from what was
/// `given`, named only when it was given on the command line (otherwise the
/// server reads the manifest's `ctx.mcp` default each time it starts).
pub fn consumer_flags(given: &Who, resolved: &Who) -> Vec<String> {
    let mut flags = Vec::new();
    if given.is_author() {
        return flags;
    }
    if let Some(agent) = &resolved.agent {
        flags.extend(["--agent".to_string(), agent.clone()]);
    }
    for r in &resolved.roles {
        flags.extend(["--role".to_string(), r.clone()]);
    }
    flags
}

/// This executable, as a user file names it (`ctx` from PATH when unknown).
pub fn current_exe() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| "ctx".into())
}

/// How `host` starts `ctx mcp <flags>` for the repository at `root` from a `scope`
/// file. Project files hold no path of this machine.
pub fn launch(
    host: Host,
    scope: Scope,
    exe: &str,
    root: &Path,
    flags: &[String],
) -> Result<Launch> {
    let mut args = vec!["mcp".to_string()];
    args.extend(flags.iter().cloned());
    let command = match scope {
        Scope::Project => {
            if host.expands_workspace_folder() {
                args.extend(["-C".to_string(), "${workspaceFolder}".to_string()]);
            }
            "ctx".to_string()
        }
        Scope::User => {
            let root = root.to_str().ok_or_else(|| {
                Error::Usage(format!(
                    "{}: the repository's path is not UTF-8, so no host file can name it",
                    root.display()
                ))
            })?;
            args.extend(["-C".to_string(), root.to_string()]);
            exe.to_string()
        }
    };
    Ok(Launch { command, args })
}

/// The entry alone, in the host's format: what to paste into its file.
pub fn snippet(host: Host, name: &str, launch: &Launch) -> String {
    if host.format() == Format::Toml {
        return edit_toml::merge(None, name, &launch.command, &launch.args, Path::new(""))
            .expect("a new document")
            .text;
    }
    let entry = host.entry(&launch.command, &launch.args);
    let mut text =
        serde_json::to_string_pretty(&serde_json::json!({ host.servers_key(): { name: entry } }))
            .expect("a JSON value");
    text.push('\n');
    text
}

/// `text` merged with our entry by the host's format rules.
pub fn merge(
    host: Host,
    existing: Option<&str>,
    name: &str,
    launch: &Launch,
    file: &Path,
) -> Result<Edited> {
    match host.format() {
        Format::Toml => edit_toml::merge(existing, name, &launch.command, &launch.args, file),
        format => {
            let entry = host.entry(&launch.command, &launch.args);
            let fresh = host.new_document(name, &entry);
            edit_json::merge(
                existing,
                format,
                host.servers_key(),
                name,
                &entry,
                &fresh,
                file,
            )
        }
    }
}

/// Read `file` (following a symbolic link to the file it names) and plan the merge.
pub fn plan(host: Host, file: &Path, name: &str, launch: &Launch) -> Result<Plan> {
    let file = match std::fs::symlink_metadata(file) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(file).map_err(|e| Error::io(file, &e))?
        }
        _ => file.to_path_buf(),
    };
    let before = match ctx_core::fs::read_regular(&file, MAX_FILE_BYTES) {
        Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| Error::InvalidHint {
            message: format!("{}: not UTF-8 text; nothing was written", file.display()),
            help: "fix the file (or move it away) and run again".into(),
        })?),
        Err(ctx_core::fs::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(Error::Invalid(format!(
                "{}: cannot read it: {e}; nothing was written",
                file.display()
            )))
        }
    };
    let edited = merge(host, before.as_deref(), name, launch, &file)?;
    Ok(Plan {
        file,
        before,
        after: edited.text,
        outcome: edited.outcome,
    })
}

/// The plan as a unified diff; `shown` is how the file is named in its header.
pub fn diff(plan: &Plan, shown: &str) -> String {
    let before = plan.before.as_deref().unwrap_or("");
    let old = if plan.before.is_some() {
        shown
    } else {
        "/dev/null"
    };
    similar::TextDiff::from_lines(before, &plan.after)
        .unified_diff()
        .context_radius(3)
        .header(old, shown)
        .to_string()
}

/// Write the plan atomically, only over the bytes it was planned from: a file that
/// appeared or changed since is left alone.
pub fn apply(plan: &Plan) -> Result<()> {
    use ctx_core::fs::{Existing, Mode};
    let file = &plan.file;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    let changed = || {
        Error::Invalid(format!(
            "{}: the file changed while ctx was writing it; nothing was written, run again",
            file.display()
        ))
    };
    // The host's file keeps its mode (it may hold other servers' secrets).
    match &plan.before {
        None => ctx_core::fs::write_atomic(
            file,
            plan.after.as_bytes(),
            Mode::Preserve,
            Existing::Refuse,
        )
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => changed(),
            _ => Error::io(file, &e),
        }),
        Some(before) => ctx_core::fs::replace_if_unchanged(
            file,
            before.as_bytes(),
            plan.after.as_bytes(),
            Mode::Preserve,
        )
        .map_err(|e| match e {
            ctx_core::fs::ReplaceError::Changed => changed(),
            other => Error::Invalid(format!("{}: {other}", file.display())),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_entries_name_no_path_of_this_machine() {
        let root = Path::new("/home/me/shop");
        let flags = ["--agent".to_string(), "helper".to_string()];
        for host in Host::ALL.into_iter().filter(|h| h.has_project_scope()) {
            let l = launch(host, Scope::Project, "/opt/bin/ctx", root, &flags).unwrap();
            assert_eq!(l.command, "ctx", "{host:?}");
            let text = snippet(host, "ctx-shop", &l);
            assert!(
                !text.contains("/home/me") && !text.contains("/opt"),
                "{host:?}: {text}"
            );
        }
        let vs = launch(Host::VsCode, Scope::Project, "x", root, &flags).unwrap();
        assert_eq!(
            vs.args,
            ["mcp", "--agent", "helper", "-C", "${workspaceFolder}"]
        );
        let user = launch(
            Host::ClaudeDesktop,
            Scope::User,
            "/opt/bin/ctx",
            root,
            &flags,
        )
        .unwrap();
        assert_eq!(user.command, "/opt/bin/ctx");
        assert_eq!(
            user.args,
            ["mcp", "--agent", "helper", "-C", "/home/me/shop"]
        );
    }

    #[test]
    fn each_repository_has_its_own_entry_name() {
        assert_eq!(default_name("shop").unwrap(), "ctx-shop");
        assert!(default_name(&"x".repeat(70)).is_err());
        assert!(check_name("a b").is_err() && check_name("").is_err());
    }

    #[test]
    fn the_diff_shows_a_new_file_against_dev_null() {
        let l = launch(Host::Cursor, Scope::Project, "ctx", Path::new("/r"), &[]).unwrap();
        let p = Plan {
            file: "/r/.cursor/mcp.json".into(),
            before: None,
            after: snippet(Host::Cursor, "ctx-r", &l),
            outcome: Outcome::Added,
        };
        let d = diff(&p, ".cursor/mcp.json");
        assert!(
            d.starts_with("--- /dev/null\n+++ .cursor/mcp.json\n@@ -0,0 +1,"),
            "{d}"
        );
        assert!(d.contains("+      \"command\": \"ctx\",\n"), "{d}");
    }
}
