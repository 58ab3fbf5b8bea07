//! `ctx private status`: each private collection's recipients and files — encrypted
//! to whom, stale, or plaintext by mistake — plus encrypted files outside them.

use std::fmt::Write as _;

use serde_json::{json, Value};

use ctx_core::error::{Exit, Result};
use ctx_core::private::config::short;
use ctx_core::private::{format, ops};

use super::{format_of, keyring, IdentityArgs, Scope};
use crate::cli::{Global, Printer};

/// One file's state.
struct Row {
    file: String,
    collection: String,
    state: &'static str,
    detail: String,
    recipients: Vec<String>,
}

pub fn run(
    g: &Global,
    p: &Printer,
    check: bool,
    json_out: bool,
    ida: &IdentityArgs,
) -> Result<Exit> {
    let scope = Scope::load(g)?;
    let config_failed = !json_out && scope.report_config(p);
    let config_failed = config_failed || ctx_core::validate::failed(&scope.cfg_diags, false);
    let ring = if check {
        Some(keyring(p, ida)?.ok_or_else(|| {
            ctx_core::error::Error::Usage("--check decrypts each file: give an identity (--identity FILE, CTX_AGE_IDENTITY, or ~/.config/ctx/age/identity.txt)".into())
        })?)
    } else {
        None
    };
    let mut rows: Vec<Row> = Vec::new();
    for member in &scope.members {
        let keys = scope.keys_of(member);
        let Ok(format) = format_of(&member.rel) else {
            continue;
        };
        let text = match std::fs::read_to_string(&member.abs) {
            Ok(t) => t,
            Err(e) if keys.is_some() => {
                rows.push(row(
                    &member.rel,
                    keys.map(|k| k.name.as_str()),
                    "invalid",
                    format!("cannot read: {e}"),
                    Vec::new(),
                ));
                continue;
            }
            Err(_) => continue,
        };
        if keys.is_none() && !text.contains(format::BEGIN) {
            continue; // an ordinary clear member
        }
        let collection = keys.map(|k| k.name.as_str());
        let sealed = match format::parse_sealed(format, &text) {
            Ok(Some(s)) => s,
            Ok(None) if keys.is_some() => {
                rows.push(row(
                    &member.rel,
                    collection,
                    "plaintext",
                    format!("run `ctx private encrypt {}`", member.rel),
                    Vec::new(),
                ));
                continue;
            }
            Ok(None) => continue,
            Err(e) => {
                rows.push(row(&member.rel, collection, "invalid", e, Vec::new()));
                continue;
            }
        };
        let (mut state, mut detail) = match keys {
            None => (
                "outside",
                "encrypted, but its collection is not declared private".to_string(),
            ),
            Some(k) if sealed.recipients == k.keys() => ("encrypted", "current".to_string()),
            Some(k) => {
                let want = k.keys();
                let added = want
                    .iter()
                    .filter(|x| !sealed.recipients.contains(x))
                    .count();
                let removed = sealed
                    .recipients
                    .iter()
                    .filter(|x| !want.contains(x))
                    .count();
                (
                    "stale",
                    format!("recipients differ (+{added} −{removed}): run `ctx private rekey`"),
                )
            }
        };
        if let Some(ring) = &ring {
            match ops::decrypt(&member.rel, &sealed.armor, Some(ring)) {
                Ok((plain, key)) => {
                    let bad = format::parse_doc(format, &plain)
                        .map(|d| ops::mismatched(&sealed.header, &d.fields))
                        .unwrap_or_else(|e| vec![format!("unparseable plaintext: {e}")]);
                    if bad.is_empty() {
                        detail.push_str(&format!("; opens with {key}"));
                    } else {
                        state = "invalid";
                        detail = format!(
                            "clear metadata does not match the encrypted copy: {}",
                            bad.join(", ")
                        );
                    }
                }
                Err(e) => {
                    state = "unreadable";
                    detail = e.to_string();
                }
            }
        }
        rows.push(row(
            &member.rel,
            collection,
            state,
            detail,
            sealed.recipients,
        ));
    }
    let bad = rows
        .iter()
        .filter(|r| matches!(r.state, "plaintext" | "invalid" | "unreadable"))
        .count();
    let text = if json_out {
        json_report(&scope, &rows, ring.as_ref())
    } else {
        human_report(&scope, &rows, ring.as_ref())
    };
    crate::cli::io_result(p.out(&text))?;
    Ok(if bad > 0 || config_failed {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}

fn row(
    file: &str,
    collection: Option<&str>,
    state: &'static str,
    detail: String,
    recipients: Vec<String>,
) -> Row {
    Row {
        file: file.to_string(),
        collection: collection.unwrap_or("").to_string(),
        state,
        detail,
        recipients,
    }
}

fn human_report(scope: &Scope, rows: &[Row], ring: Option<&ctx_core::private::Keyring>) -> String {
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
            .map(|c| c.source.as_str())
            .unwrap_or("");
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
        let mine: Vec<&Row> = rows.iter().filter(|r| &r.collection == name).collect();
        if mine.is_empty() {
            out.push_str("  (no files)\n");
        }
        for r in mine {
            let _ = writeln!(
                out,
                "  {:<10} {}  {}",
                r.state.to_uppercase(),
                r.file,
                r.detail
            );
        }
        out.push('\n');
    }
    let outside: Vec<&Row> = rows.iter().filter(|r| r.collection.is_empty()).collect();
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
    let count = |s: &str| rows.iter().filter(|r| r.state == s).count();
    let _ = writeln!(
        out,
        "{} encrypted ({} stale), {} plaintext, {} invalid{}",
        count("encrypted") + count("stale"),
        count("stale"),
        count("plaintext"),
        count("invalid"),
        if ring.is_some() {
            format!(", {} unreadable", count("unreadable"))
        } else {
            String::new()
        }
    );
    out
}

fn json_report(scope: &Scope, rows: &[Row], ring: Option<&ctx_core::private::Keyring>) -> String {
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
                "collection": (!r.collection.is_empty()).then_some(&r.collection),
                "state": r.state,
                "detail": r.detail,
                "recipients": r.recipients,
            })
        })
        .collect();
    let doc = json!({
        "collections": collections,
        "files": files,
        "identity": ring.map(|r| r.describe()),
        "diagnostics": scope.cfg_diags,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("serializable");
    s.push('\n');
    s
}
