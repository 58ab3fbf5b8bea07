//! Our `[mcp_servers.NAME]` table merged into Codex's `config.toml` with
//! toml_edit, which keeps the user's formatting, comments and key order; only the
//! table we add or replace is new.
//!
//! Shape: <https://developers.openai.com/codex/mcp> (`[mcp_servers.<name>]` with
//! `command`, `args`, optional `env` and `cwd`).

use std::path::Path;

use toml_edit::{Array, DocumentMut, Item, Table, TableLike, Value};

use ctx_core::error::{Error, Result};

use super::{Edited, Outcome};

const SERVERS: &str = "mcp_servers";

fn refused(file: &Path, why: String) -> Error {
    Error::InvalidHint {
        message: format!("{}: {why}; nothing was written", file.display()),
        help: "fix the file (or move it away) and run again".into(),
    }
}

/// Line and column (1-based) of byte `at` in `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// `existing` (the file's text, `None` when there is none) with our server table.
pub fn merge(
    existing: Option<&str>,
    name: &str,
    command: &str,
    args: &[String],
    file: &Path,
) -> Result<Edited> {
    let text = existing.unwrap_or("");
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        // The message and where, never the line itself: the file may hold secrets.
        let (line, column) = position(text, e.span().map_or(0, |s| s.start));
        refused(
            file,
            format!(
                "not valid TOML at line {line}, column {column}: {}",
                e.message()
            ),
        )
    })?;
    let servers = doc.as_table_mut().entry(SERVERS).or_insert_with(|| {
        // `[mcp_servers.NAME]` alone, without an empty `[mcp_servers]` header.
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let ours = table(command, args);
    let outcome = match servers.as_table_like().and_then(|t| t.get(name)) {
        None if servers.as_table_like().is_none() => {
            return Err(refused(file, format!("`{SERVERS}` is not a table")))
        }
        None => Outcome::Added,
        Some(old) if same(old, command, args) => {
            return Ok(Edited {
                text: text.to_string(),
                outcome: Outcome::Unchanged,
            })
        }
        Some(_) => Outcome::Replaces,
    };
    if let Some(t) = servers.as_table_mut() {
        let mut ours = ours;
        // A replaced table keeps its place and the comments above it.
        if let Some(old) = t.get(name).and_then(Item::as_table) {
            *ours.decor_mut() = old.decor().clone();
            ours.set_position(old.position());
        }
        t.insert(name, Item::Table(ours));
    } else if let Some(t) = servers.as_inline_table_mut() {
        t.insert(name, Value::InlineTable(ours.into_inline_table()));
    }
    Ok(Edited {
        text: doc.to_string(),
        outcome,
    })
}

fn table(command: &str, args: &[String]) -> Table {
    let mut t = Table::new();
    t.insert("command", toml_edit::value(command));
    let mut a = Array::new();
    for arg in args {
        a.push(arg.as_str());
    }
    t.insert("args", toml_edit::value(a));
    t
}

/// Is `item` exactly our entry (same command and arguments, nothing else)?
fn same(item: &Item, command: &str, args: &[String]) -> bool {
    let Some(t): Option<&dyn TableLike> = item.as_table_like() else {
        return false;
    };
    let keys: Vec<&str> = t.iter().map(|(k, _)| k).collect();
    let got_args: Option<Vec<&str>> = t
        .get("args")
        .and_then(Item::as_array)
        .and_then(|a| a.iter().map(|v| v.as_str()).collect());
    keys.len() == 2
        && t.get("command").and_then(Item::as_str) == Some(command)
        && got_args.is_some_and(|g| g.iter().copied().eq(args.iter().map(String::as_str)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> Vec<String> {
        ["mcp", "--agent", "a"].map(String::from).to_vec()
    }

    fn run(text: Option<&str>) -> Result<Edited> {
        merge(text, "ctx-shop", "ctx", &args(), Path::new("config.toml"))
    }

    #[test]
    fn the_users_toml_is_kept_byte_for_byte_around_our_table() {
        let text = "# my codex\nmodel = \"o3\"  # pinned\n\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\n  \"-y\", \"docs\",\n]\n";
        let out = run(Some(text)).unwrap();
        assert_eq!(out.outcome, Outcome::Added);
        assert!(out.text.starts_with(text), "{}", out.text);
        let v: toml::Table = toml::from_str(&out.text).unwrap();
        assert_eq!(
            v["mcp_servers"]["ctx-shop"]["command"].as_str(),
            Some("ctx")
        );
        assert_eq!(v["mcp_servers"]["docs"]["command"].as_str(), Some("npx"));
        let again = run(Some(&out.text)).unwrap();
        assert_eq!(again.outcome, Outcome::Unchanged);
        assert_eq!(again.text, out.text);
    }

    #[test]
    fn a_new_file_has_only_our_table() {
        let out = run(None).unwrap();
        assert_eq!(
            out.text,
            "[mcp_servers.ctx-shop]\ncommand = \"ctx\"\nargs = [\"mcp\", \"--agent\", \"a\"]\n"
        );
    }

    #[test]
    fn a_different_table_is_replaced_where_it_was_with_its_comment() {
        let text = "# ours\n[mcp_servers.ctx-shop]\ncommand = \"old\"\n\n[other]\nx = 1\n";
        let out = run(Some(text)).unwrap();
        assert_eq!(out.outcome, Outcome::Replaces);
        assert!(out
            .text
            .starts_with("# ours\n[mcp_servers.ctx-shop]\ncommand = \"ctx\"\n"));
        assert!(out.text.ends_with("[other]\nx = 1\n"), "{}", out.text);
        let inline = run(Some("mcp_servers = { other = { command = \"x\" } }\n")).unwrap();
        let v: toml::Table = toml::from_str(&inline.text).unwrap();
        assert_eq!(
            v["mcp_servers"]["ctx-shop"]["args"][0].as_str(),
            Some("mcp")
        );
    }

    #[test]
    fn broken_toml_is_refused_without_quoting_the_file() {
        let err = run(Some("token = \"s3cret\"\n[[[\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        let err = run(Some("mcp_servers = 3\n")).unwrap_err().to_string();
        assert!(err.contains("not a table"), "{err}");
    }
}
