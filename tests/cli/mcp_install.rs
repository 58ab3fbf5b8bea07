//! `ctx mcp install` for every host, end to end: each host's file is seeded with
//! the user's own settings, the entry is merged with `--write`, and the written
//! file is read back with that format's own parser (serde_json for JSON, json5 for
//! JSONC, toml for TOML): our entry has the host's shape, every byte the user wrote
//! is still there, and a second run changes nothing and says so.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{ctx_in, Repo, Run};

pub fn manifest(id: &str) -> String {
    format!(
        "opencontext: \"1.0\"\nid: {id}\ncollections:\n  notes: ./notes/**\nroles:\n  support:\n    include: [\"notes.*\"]\nagents:\n  helper:\n    roles: [support]\n"
    )
}

pub fn repo(id: &str) -> Repo {
    Repo::new(&[
        ("opencontext.yaml", &manifest(id)),
        (
            "notes/hello.md",
            "---\nid: notes.hello\ntype: note\ntitle: Hello\n---\nHello.\n",
        ),
    ])
}

/// `ctx mcp install ARGS` in `dir`, with `home` as the user's home.
pub fn install(dir: &Path, home: &Path, args: &[&str]) -> Run {
    ctx_in(dir)
        .args(["mcp", "install"])
        .args(args.iter().copied())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .run()
}

/// How a host's file is read back: with the parser of its own format.
#[derive(Clone, Copy)]
enum Reader {
    Json,
    Jsonc,
    Toml,
}

impl Reader {
    fn parse(self, text: &str) -> Value {
        match self {
            Reader::Json => serde_json::from_str(text).expect("strict JSON"),
            Reader::Jsonc => json5::from_str(text).expect("JSON with comments"),
            Reader::Toml => {
                let t: toml::Table = toml::from_str(text).expect("TOML");
                serde_json::to_value(t).expect("as JSON")
            }
        }
    }
}

struct Case<'a> {
    host: &'a str,
    /// The host's file, from the repository (project) or the home (user).
    file: &'a str,
    user: bool,
    /// What the user already had there.
    seed: &'a str,
    reader: Reader,
    servers: &'a str,
    /// Our entry, as the host reads it.
    entry: Value,
}

fn check(case: Case) {
    let repo = repo("shop");
    let home = repo.home().path().to_path_buf();
    let base = if case.user {
        home.clone()
    } else {
        repo.path().to_path_buf()
    };
    let path = base.join(case.file);
    crate::support::write(&base, case.file, case.seed.as_bytes());
    let mine = case.reader.parse(case.seed);

    let r = install(
        repo.path(),
        &home,
        &["--host", case.host, "--agent", "helper", "--write"],
    );
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(r.stdout.contains("added `ctx-shop`"), "{}", r.describe());
    let written = std::fs::read_to_string(&path).expect("written");
    let v = case.reader.parse(&written);
    assert_eq!(
        v[case.servers]["ctx-shop"], case.entry,
        "{}:\n{written}",
        case.host
    );
    // Every setting the user had is still there, and so is every line they wrote.
    for (k, want) in mine.as_object().unwrap() {
        if k == case.servers {
            for (name, server) in want.as_object().unwrap() {
                assert_eq!(&v[case.servers][name], server, "{}: {name}", case.host);
            }
        } else {
            assert_eq!(&v[k], want, "{}: {k}", case.host);
        }
    }
    for line in case
        .seed
        .lines()
        .filter(|l| !l.trim().is_empty() && l.trim() != "}")
    {
        assert!(
            written.contains(line),
            "{}: lost {line:?}:\n{written}",
            case.host
        );
    }

    let again = install(
        repo.path(),
        &home,
        &["--host", case.host, "--agent", "helper", "--write"],
    );
    assert_eq!(again.code, 0, "{}", again.describe());
    assert!(
        again.stdout.contains("nothing to change"),
        "{}",
        again.describe()
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        written,
        "{}: idempotent",
        case.host
    );
}

fn args(extra: &[&str]) -> Value {
    let mut a = vec!["mcp", "--agent", "helper"];
    a.extend_from_slice(extra);
    json!(a)
}

/// A user file's entry: this binary and the repository's absolute path.
fn user_args(repo: &Path) -> Vec<String> {
    let root = std::fs::canonicalize(repo).unwrap();
    ["mcp", "--agent", "helper", "-C", root.to_str().unwrap()]
        .map(String::from)
        .to_vec()
}

#[test]
fn claude_code_merges_into_the_projects_mcp_json() {
    check(Case {
        host: "claude-code",
        file: ".mcp.json",
        user: false,
        seed: "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"other-server\", \"args\": []}\n  },\n  \"keep\": 1\n}\n",
        reader: Reader::Json,
        servers: "mcpServers",
        entry: json!({"type": "stdio", "command": "ctx", "args": args(&[])}),
    });
}

#[test]
fn cursor_merges_into_its_project_file_with_the_workspace_folder() {
    check(Case {
        host: "cursor",
        file: ".cursor/mcp.json",
        user: false,
        seed: "{\n    \"mcpServers\": {\n        \"other\": {\"command\": \"x\"}\n    }\n}",
        reader: Reader::Json,
        servers: "mcpServers",
        entry: json!({"command": "ctx", "args": args(&["-C", "${workspaceFolder}"])}),
    });
}

#[test]
fn vscode_keeps_comments_trailing_commas_and_inputs() {
    check(Case {
        host: "vscode",
        file: ".vscode/mcp.json",
        user: false,
        seed: "// team servers\n{\n\t\"inputs\": [{\"type\": \"promptString\", \"id\": \"key\", \"description\": \"Key\", \"password\": true},],\n\t\"servers\": {\n\t\t\"other\": {\"type\": \"stdio\", \"command\": \"x\"}, // theirs\n\t},\n}\n",
        reader: Reader::Jsonc,
        servers: "servers",
        entry: json!({"type": "stdio", "command": "ctx", "args": args(&["-C", "${workspaceFolder}"])}),
    });
}

#[test]
fn codex_keeps_the_users_toml_and_adds_its_table() {
    check(Case {
        host: "codex",
        file: ".codex/config.toml",
        user: false,
        seed: "# codex settings\nmodel = \"o3\" # pinned\n\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs\"]\n",
        reader: Reader::Toml,
        servers: "mcp_servers",
        entry: json!({"command": "ctx", "args": args(&[])}),
    });
}

#[test]
fn zed_keeps_its_settings_and_comments() {
    check(Case {
        host: "zed",
        file: ".zed/settings.json",
        user: false,
        seed: "// Zed project settings\n{\n  \"tab_size\": 2, // narrow\n  \"context_servers\": {\n    \"other\": {\"command\": \"x\", \"args\": []},\n  },\n}\n",
        reader: Reader::Jsonc,
        servers: "context_servers",
        entry: json!({"command": "ctx", "args": args(&[])}),
    });
}

#[test]
fn gemini_cli_keeps_comments_without_adding_trailing_commas() {
    check(Case {
        host: "gemini-cli",
        file: ".gemini/settings.json",
        user: false,
        seed: "{\n  // mine\n  \"theme\": \"GitHub\"\n}\n",
        reader: Reader::Jsonc,
        servers: "mcpServers",
        entry: json!({"command": "ctx", "args": args(&[])}),
    });
}

#[test]
fn copilot_cli_writes_the_shared_github_file() {
    check(Case {
        host: "copilot-cli",
        file: ".github/mcp.json",
        user: false,
        seed: "{\n  \"mcpServers\": {\n    \"playwright\": {\"type\": \"local\", \"command\": \"npx\", \"args\": [\"@playwright/mcp@latest\"], \"tools\": [\"*\"]}\n  }\n}\n",
        reader: Reader::Json,
        servers: "mcpServers",
        entry: json!({"type": "local", "command": "ctx", "args": args(&[]), "tools": ["*"]}),
    });
}

#[test]
fn windsurf_merges_into_the_users_file() {
    check_user("windsurf", ".codeium/windsurf/mcp_config.json");
}

#[test]
fn claude_desktop_merges_into_the_users_file() {
    let file = if cfg!(target_os = "macos") {
        "Library/Application Support/Claude/claude_desktop_config.json"
    } else {
        ".config/Claude/claude_desktop_config.json"
    };
    check_user("claude-desktop", file);
}

/// This binary, as a user file names it.
pub fn ctx_exe() -> String {
    let exe = std::fs::canonicalize(crate::support::CTX).unwrap();
    exe.to_str().unwrap().to_string()
}

/// [`check`] for a user-only host: its entry names this binary and the repository.
fn check_user(host: &str, file: &str) {
    let repo = repo("shop");
    let home = repo.home().path().to_path_buf();
    let path = home.join(file);
    let seed = "{\n  \"globalShortcut\": \"Ctrl+Space\",\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n";
    crate::support::write(&home, file, seed.as_bytes());
    let r = install(
        repo.path(),
        &home,
        &["--host", host, "--agent", "helper", "--write"],
    );
    assert_eq!(r.code, 0, "{}", r.describe());
    let written = std::fs::read_to_string(&path).unwrap();
    let v: Value = serde_json::from_str(&written).unwrap();
    let entry = json!({"command": ctx_exe(), "args": user_args(repo.path())});
    assert_eq!(v["mcpServers"]["ctx-shop"], entry, "{host}:\n{written}");
    assert_eq!(v["globalShortcut"], "Ctrl+Space");
    assert_eq!(v["mcpServers"]["other"]["command"], "x");
    for line in seed.lines().filter(|l| l.trim() != "}") {
        assert!(written.contains(line), "{host}: lost {line:?}:\n{written}");
    }
    let again = install(
        repo.path(),
        &home,
        &["--host", host, "--agent", "helper", "--write"],
    );
    assert!(
        again.stdout.contains("nothing to change"),
        "{}",
        again.describe()
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
}
