//! Every log a repository keeps, checked in one pass (`ctx audit verify`,
//! `ctx doctor`): the manifest's audit log, a personal vault's sealed audit
//! log, the Context Layer receipt log with its anchor, and the writes a kill
//! interrupted. Each comes with what to do about it.

use std::path::{Path, PathBuf};

use super::{Log, Report};
use crate::error::Result;
use crate::fs::txn;
use crate::manifest::Manifest;

/// One log and what its check found.
#[derive(Debug, Clone)]
pub struct Checked {
    /// `audit`, `vault-audit`, `receipts` or `writes`.
    pub kind: &'static str,
    pub path: PathBuf,
    pub report: Report,
}

/// What to repair while checking.
#[derive(Debug, Clone, Copy, Default)]
pub struct Repair {
    /// Re-anchor a lost audit head (`--rehead`).
    pub rehead: bool,
    /// Repair what interrupted appends and writes left (`--repair`).
    pub repair: bool,
}

/// Check every log of the repository `m` describes. The manifest's audit
/// log is always listed (it may be empty); the others when they exist.
pub fn check(m: &Manifest, how: Repair) -> Result<Vec<Checked>> {
    let mut out = Vec::new();
    if how.repair {
        // Completing interrupted writes appends their events: first.
        let lock = crate::fs::RepoLock::acquire(&m.root)
            .map_err(|e| crate::error::Error::io(&m.root, &e))?;
        drop(lock);
    }
    out.push(writes(&m.root));
    let log = Log::for_manifest(m)?;
    out.push(Checked {
        kind: "audit",
        path: log.path().to_path_buf(),
        report: log.verify_and_repair(how.rehead, how.repair)?,
    });
    if let Ok(Some(cfg)) = crate::personal::config::PersonalConfig::from_manifest(m) {
        let vault = Log::new(cfg.state_dir(m).join(crate::personal::audit::FILE));
        if vault.path().exists() {
            out.push(Checked {
                kind: "vault-audit",
                path: vault.path().to_path_buf(),
                report: vault.verify_and_repair(false, how.repair)?,
            });
        }
    }
    if let Some(c) = receipts(m, how.repair) {
        out.push(c);
    }
    Ok(out)
}

/// Writes a kill interrupted: waiting for the next writer, or kept for a person.
fn writes(root: &Path) -> Checked {
    let mut report = Report::default();
    for t in txn::pending(root) {
        let rel = t
            .journal
            .strip_prefix(root)
            .unwrap_or(&t.journal)
            .display()
            .to_string();
        let targets = t.targets.join(", ");
        if t.conflict {
            report.problems.push(format!(
                "{rel}: an interrupted write of {targets} could not be completed because a file changed after the kill; the staged files it names hold the new content: compare, keep what is right, then delete {rel} and those files"
            ));
        } else {
            report.pending.push(format!(
                "{rel}: a killed command left a write of {targets} half done; the next write completes it (files, sign-offs, audit events), or run `ctx audit verify --repair`"
            ));
        }
    }
    report.entries = report.problems.len() as u64 + report.pending.len() as u64;
    Checked {
        kind: "writes",
        path: root.join(crate::fs::tmp::DIR),
        report,
    }
}

/// The Context Layer receipt log, verified in full against the declared
/// anchor key (no private key needed); with `repair`, opened with the anchor
/// key, which rolls back what an interrupted append left.
fn receipts(m: &Manifest, repair: bool) -> Option<Checked> {
    use crate::exchange::receipts::{recover, ReceiptLog};
    let state = crate::exchange::state::StateDir::new(&m.root);
    let (log_path, anchor_path) = (state.log_path(), state.anchor_path());
    if !log_path.exists() && !anchor_path.exists() {
        return None;
    }
    let mut report = Report::default();
    let cfg = crate::exchange::config::ExchangeConfig::from_manifest(m);
    let public = cfg
        .as_ref()
        .ok()
        .and_then(|c| c.keys.get(c.anchor_key.as_deref()?).map(|(k, _)| *k));
    match (cfg, public) {
        (Err(e), _) => report.problems.push(format!(
            "the exchange configuration does not parse ({}: {}), so the receipt log cannot be checked",
            e.code, e.message
        )),
        (Ok(_), None) => report.problems.push(
            "no anchor key is declared (extensions.ctx.exchange.receipts.anchor_key), so the receipt log cannot be authenticated".into(),
        ),
        (Ok(c), Some(public)) => {
            if repair {
                let opened = crate::exchange::state::open_log(m, &c, &state, &Default::default());
                if let Err(e) = opened {
                    report.notes.push(format!(
                        "not repaired ({}: {}): the anchor key is needed to roll back and record; run this where it is available",
                        e.code, e.message
                    ));
                }
            }
            match ReceiptLog::inspect(&log_path, &anchor_path, public) {
                (Ok(s), _) => report.entries = s.entries.len() as u64,
                (Err(e), true) => report.pending.push(format!(
                    "{}: {}; an interrupted append left this: the next Context Layer operation rolls it back and records that in a receipt, or run `ctx audit verify --repair` (needs the anchor key)",
                    e.code, e.message
                )),
                (Err(e), false) => report.problems.push(format!(
                    "{}: {}; this is not what a crash leaves: compare the log and its anchor with your last good copy (git history) and restore both together",
                    e.code, e.message
                )),
            }
        }
    }
    let waiting = state
        .all(crate::exchange::state::Kind::Pending)
        .map_or(0, |v| v.len());
    if waiting > 0 {
        report.pending.push(format!(
            "{waiting} receipt(s) of completed operations wait in {} for the log (a kill or a failed append came between): run `ctx receipts retry`",
            state.dir.join("pending").display()
        ));
    }
    let kept = recover::rolled_back(&log_path);
    if !kept.is_empty() {
        report.notes.push(format!(
            "{} rollback(s) of entries an interrupted append left are kept in {}",
            kept.len(),
            recover::rolled_back_path(&log_path).display()
        ));
    }
    Some(Checked {
        kind: "receipts",
        path: log_path,
        report,
    })
}
