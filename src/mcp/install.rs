//! `ctx mcp install`: the configuration snippet that makes an MCP client start
//! `ctx mcp` for this repository. Printed by default; with `--write` it is
//! merged into the client's JSON file: only our own server entry is added or
//! replaced, every other key is kept as it was, a file that is not a JSON
//! object is refused (never overwritten), and the write is atomic.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use ctx_core::error::{Error, Result};
use ctx_core::view::Who;

/// The MCP clients ctx knows how to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json` in the repository (project scope).
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json` in the user's configuration folder.
    ClaudeDesktop,
    /// Cursor: `.cursor/mcp.json` in the repository.
    Cursor,
}

impl Client {
    pub fn as_str(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Cursor => "cursor",
        }
    }

    /// Where the client reads its server list.
    pub fn default_file(self, root: &Path) -> Result<PathBuf> {
        Ok(match self {
            Client::ClaudeCode => root.join(".mcp.json"),
            Client::Cursor => root.join(".cursor").join("mcp.json"),
            Client::ClaudeDesktop => {
                let home = std::env::var_os("HOME").map(PathBuf::from).ok_or_else(|| {
                    Error::Usage("HOME is not set; pass --file <claude_desktop_config.json>".into())
                })?;
                if cfg!(target_os = "macos") {
                    home.join("Library/Application Support/Claude/claude_desktop_config.json")
                } else {
                    std::env::var_os("XDG_CONFIG_HOME")
                        .map(PathBuf::from)
                        .filter(|p| p.is_absolute())
                        .unwrap_or_else(|| home.join(".config"))
                        .join("Claude/claude_desktop_config.json")
                }
            }
        })
    }
}

/// A server name a client keys its list by: 1-64 letters, digits, `-` or `_`.
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

/// This executable, as the client should start it (`ctx` from PATH when unknown).
pub fn current_exe() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "ctx".into())
}

/// The server entry: how the client starts `ctx mcp`.
pub fn entry(client: Client, exe: &str, root: &Path, who: &[String]) -> Value {
    let mut args = vec!["mcp".to_string()];
    args.extend(who.iter().cloned());
    args.push("-C".into());
    args.push(root.display().to_string());
    let mut e = Map::new();
    if client == Client::ClaudeCode {
        e.insert("type".into(), json!("stdio"));
    }
    e.insert("command".into(), json!(exe));
    e.insert("args".into(), json!(args));
    Value::Object(e)
}

/// The whole snippet (`{"mcpServers": {name: entry}}`).
pub fn snippet(name: &str, entry: &Value) -> Value {
    json!({ "mcpServers": { name: entry } })
}

/// What `merge` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Merged {
    Added,
    Replaced,
    Unchanged,
}

/// Merge our entry into an existing configuration document (or a new one).
pub fn merge(
    existing: Option<&str>,
    name: &str,
    entry: &Value,
    file: &Path,
) -> Result<(String, Merged)> {
    let mut doc = match existing {
        None => Map::new(),
        Some(text) if text.trim().is_empty() => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(Error::Invalid(format!(
                    "{}: expected a JSON object at the top level; nothing was written",
                    file.display()
                )))
            }
            Err(e) => {
                return Err(Error::Invalid(format!(
                    "{}: not valid JSON (line {}, column {}: {e}); fix or move it, then run again. Nothing was written",
                    file.display(),
                    e.line(),
                    e.column()
                )))
            }
        },
    };
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else {
        return Err(Error::Invalid(format!(
            "{}: `mcpServers` is not a JSON object; nothing was written",
            file.display()
        )));
    };
    let how = match servers.get(name) {
        None => Merged::Added,
        Some(v) if v == entry => Merged::Unchanged,
        Some(_) => Merged::Replaced,
    };
    servers.insert(name.to_string(), entry.clone());
    let mut text = serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON");
    text.push('\n');
    Ok((text, how))
}

/// Read, merge and atomically write `file`.
pub fn write(file: &Path, name: &str, entry: &Value) -> Result<Merged> {
    let existing = match std::fs::read(file) {
        Ok(b) => Some(String::from_utf8(b).map_err(|_| {
            Error::Invalid(format!(
                "{}: not UTF-8 text; nothing was written",
                file.display()
            ))
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(file, &e)),
    };
    let (text, how) = merge(existing.as_deref(), name, entry, file)?;
    if how == Merged::Unchanged {
        return Ok(how);
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    // The client's file keeps its mode (it may hold other servers' secrets).
    ctx_core::fs::write_atomic(
        file,
        text.as_bytes(),
        ctx_core::fs::Mode::Preserve,
        ctx_core::fs::Existing::Replace,
    )
    .map_err(|e| Error::io(file, &e))?;
    Ok(how)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_unrelated_entries_and_replaces_only_ours() {
        let e = entry(
            Client::Cursor,
            "/bin/ctx",
            Path::new("/r"),
            &["--agent".into(), "a".into()],
        );
        let existing = r#"{"theme": "dark", "mcpServers": {"other": {"command": "x"}, "ctx": {"command": "old"}}}"#;
        let (text, how) = merge(Some(existing), "ctx", &e, Path::new("f.json")).expect("merges");
        assert_eq!(how, Merged::Replaced);
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["theme"], "dark");
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(
            v["mcpServers"]["ctx"]["args"],
            json!(["mcp", "--agent", "a", "-C", "/r"])
        );
        let (_, again) = merge(Some(&text), "ctx", &e, Path::new("f.json")).expect("merges");
        assert_eq!(again, Merged::Unchanged);
    }

    #[test]
    fn a_broken_file_is_refused_not_overwritten() {
        let e = entry(Client::ClaudeCode, "ctx", Path::new("/r"), &[]);
        assert!(merge(Some("{nope"), "ctx", &e, Path::new("f.json")).is_err());
        assert!(merge(Some("[1]"), "ctx", &e, Path::new("f.json")).is_err());
        assert!(merge(Some(r#"{"mcpServers": 3}"#), "ctx", &e, Path::new("f.json")).is_err());
        assert_eq!(e["type"], "stdio");
    }
}
