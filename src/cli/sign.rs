//! The `--sign` hook of `ctx resolve` / `ctx bundle`: audit event and
//! signed receipt, both written *before* the product is emitted, so a
//! required record that cannot be written means no bundle (fail closed,
//! seed 000 §11.9).

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use ctx_core::audit;
use ctx_core::error::{Error, Result};
use ctx_core::keys;
use ctx_core::load::Repo;
use ctx_core::receipt::{self, Draft, Store};

use super::resolve::{BundleFormat, ResolveArgs};
use super::Printer;

#[derive(Debug, Args, Clone, Default)]
pub struct SignArgs {
    /// Also write a signed receipt for the bundle (.ctx/receipts/<bundle_id>.json);
    /// if it cannot be written, no bundle is emitted.
    #[arg(long)]
    pub sign: bool,
    /// Key to sign with (default: the only declared key present here).
    #[arg(long, value_name = "ID", requires = "sign")]
    pub key: Option<String>,
    /// Write the receipt to this new file instead of the repository's receipt folder.
    #[arg(long, value_name = "FILE", requires = "sign")]
    pub receipt: Option<PathBuf>,
    /// Record the receipt as a correction of this earlier receipt id.
    #[arg(long, value_name = "RECEIPT_ID", requires = "sign")]
    pub supersedes: Option<String>,
}

/// Current time, whole seconds, RFC 3339.
pub fn now() -> String {
    use chrono::SubsecRound;
    ctx_core::time::format(&chrono::Utc::now().trunc_subsecs(0))
}

/// Will this run write a receipt (`--sign`, or the manifest's policy)?
pub fn receipt_wanted(repo: &Repo, a: &ResolveArgs) -> bool {
    a.sign.sign || receipts_required(repo)
}

/// `extensions: ctx.policy: { require_receipts: true }`.
fn receipts_required(repo: &Repo) -> bool {
    repo.manifest
        .extension("ctx.policy")
        .and_then(|p| p.get("require_receipts"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Record what the command is about to emit: audit events (when the
/// manifest's `audit` block asks) and a signed receipt (when `--sign` or the
/// policy asks). Any failure is an error and the caller emits nothing.
pub fn record(
    p: &Printer,
    repo: &Repo,
    a: &ResolveArgs,
    bundle: &Value,
    product: &str,
    always_bundle: bool,
    started_at: &str,
) -> Result<()> {
    let operation = if always_bundle {
        "context.bundle"
    } else {
        "context.resolve"
    };
    let m = &repo.manifest;
    let wanted = a.sign.sign || receipts_required(repo);
    let why = if a.sign.sign {
        "--sign"
    } else {
        "extensions.ctx.policy.require_receipts"
    };
    // Find the key before anything is recorded, so a missing key is
    // audited as an error rather than as a read that happened.
    let key = wanted.then(|| keys::signing_key(m, a.sign.key.as_deref()));
    let cfg = audit::Config::from_manifest(m)?;
    if let Some(cfg) = &cfg {
        let at = now();
        let mut events = Vec::new();
        if cfg.context_reads {
            let mut e = audit::bundle_event(operation, bundle, &at);
            if let Some(Err(_)) = &key {
                e["outcome"] = json!("error");
                e["reason"] = json!(format!(
                    "nothing emitted: a receipt is required ({why}) and no signing key is usable"
                ));
            }
            events.push(e);
        }
        if cfg.conflicts {
            events.extend(audit::conflict_events(bundle, &at));
        }
        for e in events {
            cfg.log
                .append(e)
                .map_err(|e| refused("an audit event", &e))?;
        }
    }
    let Some(key) = key else {
        return Ok(());
    };
    let (key_id, key) = key.map_err(|e| refused(&format!("a receipt ({why})"), &e))?;
    let format = match (a.explain && !always_bundle, a.format) {
        (true, None) => "explain",
        (true, Some(_)) => "explain-data",
        (false, Some(BundleFormat::Yaml)) => "yaml",
        (false, Some(BundleFormat::Markdown)) => "markdown",
        (false, _) => "json",
    };
    let request = json!({
        "namespace": m.id,
        "consumer": bundle["consumer"],
        "task": bundle.get("task"),
        "as_of": bundle["as_of"],
        "include_historical": a.include_historical,
        "limit": a.limit,
        "min_relevance": a.min_relevance.map(|x| x.to_string()),
        "include": a.include,
    });
    let draft = Draft {
        operation,
        bundle,
        started_at: started_at.to_string(),
        completed_at: now(),
        manifest_bytes: m.text.as_bytes(),
        request: &request,
        rendering: Some((format, product.as_bytes())),
        supersedes: a.sign.supersedes.clone(),
    };
    let written = receipt::sign(&draft, &key_id, &key).and_then(|r| {
        let path = match &a.sign.receipt {
            Some(file) => receipt::store::write_new(file, receipt::to_pretty(&r).as_bytes())
                .map_err(|e| format!("{}: {e}", file.display()))
                .map(|()| file.clone()),
            None => Store::new(receipt::default_dir(&m.root)).append(&r),
        }?;
        Ok((path, r))
    });
    let (path, r) =
        written.map_err(|e| refused(&format!("a receipt ({why})"), &Error::Invalid(e)))?;
    let shown = path.strip_prefix(&m.root).unwrap_or(&path);
    let mut note = format!(
        "signed receipt {} ({}, key {key_id})",
        shown.display(),
        r["id"].as_str().unwrap_or("")
    );
    if let Some(prev) = r.get("supersedes").and_then(Value::as_str) {
        note.push_str(&format!(", supersedes {prev}"));
    }
    let _ = p.err(&(note + "\n"));
    Ok(())
}

fn refused(what: &str, e: &Error) -> Error {
    Error::Invalid(format!(
        "{what} is required but could not be written, so no output was emitted: {e}"
    ))
}
