//! `ctx private status`: each private collection's recipients and files
//! (`ctx_core::private::status`), rendered for people or as JSON.

use std::fmt::Write as _;

use serde_json::{json, Value};

use ctx_core::error::{Exit, Result};
use ctx_core::private::config::short;
use ctx_core::private::scope::require_identity;
use ctx_core::private::status::{self, Row, State};
use ctx_core::private::{Keyring, Scope};

use super::{keyring, report_config, IdentityArgs};
use crate::cli::{Global, Printer};

pub fn run(
    g: &Global,
    p: &Printer,
    check: bool,
    json_out: bool,
    ida: &IdentityArgs,
) -> Result<Exit> {
    let scope = Scope::load(g.dir.as_deref(), &g.cwd)?;
    let config_failed = (!json_out && report_config(p, &scope)) || scope.config_failed();
    let ring = match check {
        true => Some(require_identity(
            keyring(p, ida)?,
            "--check decrypts each file",
        )?),
        false => None,
    };
    let rows = status::rows(&scope, ring.as_ref());
    let text = if json_out {
        json_report(&scope, &rows, ring.as_ref())
    } else {
        human_report(&scope, &rows, ring.as_ref())
    };
    crate::cli::io_result(p.out(&text))?;
    let bad = rows.iter().any(|r| r.state.is_problem());
    Ok(if bad || config_failed {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}

fn human_report(scope: &Scope, rows: &[Row], ring: Option<&Keyring>) -> String {
    let mut out = String::new();
    if scope.cfg.is_empty() {
        out.push_str(
            "No private collections (declare them under `extensions.ctx.private.collections`).\n",
        );
    }
    for (name, keys) in &scope.cfg.collections {
        let source = scope
            .m
            .collections
            .iter()
            .find(|c| &c.name == name)
            .map_or("", |c| c.source.as_str());
        let _ = writeln!(
            out,
            "Private collection `{name}` ({source}), {} recipient(s):",
            keys.recipients.len()
        );
        for r in &keys.recipients {
            let comment = r
                .comment
                .as_deref()
                .map(|c| format!("  {c}"))
                .unwrap_or_default();
            let _ = writeln!(out, "  {}{comment}  [{}]", short(&r.key), r.source);
        }
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| r.collection.as_ref() == Some(name))
            .collect();
        if mine.is_empty() {
            out.push_str("  (no files)\n");
        }
        for r in mine {
            let state = r.state.as_str().to_uppercase();
            let _ = writeln!(out, "  {state:<10} {}  {}", r.file, r.detail);
        }
        out.push('\n');
    }
    let outside: Vec<&Row> = rows.iter().filter(|r| r.collection.is_none()).collect();
    if !outside.is_empty() {
        out.push_str("Encrypted files outside private collections:\n");
        for r in outside {
            let _ = writeln!(out, "  {}  {}", r.file, r.detail);
        }
        out.push('\n');
    }
    if let Some(ring) = ring {
        let _ = writeln!(out, "Identity: {}", ring.describe());
    }
    let count = |s: State| rows.iter().filter(|r| r.state == s).count();
    let unreadable = match ring {
        Some(_) => format!(", {} unreadable", count(State::Unreadable)),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "{} encrypted ({} stale), {} plaintext, {} invalid{unreadable}",
        count(State::Encrypted) + count(State::Stale),
        count(State::Stale),
        count(State::Plaintext),
        count(State::Invalid),
    );
    out
}

fn json_report(scope: &Scope, rows: &[Row], ring: Option<&Keyring>) -> String {
    let collections: Vec<Value> = scope
        .cfg
        .collections
        .values()
        .map(|k| {
            json!({
                "name": k.name,
                "recipients": k.recipients.iter().map(|r| json!({"key": r.key, "short": short(&r.key), "comment": r.comment, "source": r.source})).collect::<Vec<_>>(),
                "clear": k.clear,
            })
        })
        .collect();
    let files: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "file": r.file,
                "collection": r.collection,
                "state": r.state.as_str(),
                "detail": r.detail,
                "recipients": r.recipients,
            })
        })
        .collect();
    let doc = json!({
        "collections": collections,
        "files": files,
        "identity": ring.map(Keyring::describe),
        "diagnostics": scope.cfg_diags,
    });
    serde_json::to_string_pretty(&doc).expect("serializable") + "\n"
}
