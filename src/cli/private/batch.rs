//! `ctx private encrypt` and `ctx private rekey`: plans computed by
//! `ctx_core::private::batch`, applied (and audited) there, rendered here.

use std::path::PathBuf;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::private::batch::{self, Outcome};
use ctx_core::private::scope::require_identity;
use ctx_core::private::Scope;

use super::{keyring, report_config, IdentityArgs};
use crate::cli::{Global, Printer};

pub fn encrypt(g: &Global, p: &Printer, paths: &[PathBuf]) -> Result<Exit> {
    let scope = Scope::load_for_write(g.dir.as_deref(), &g.cwd)?;
    if report_config(p, &scope) {
        return Ok(Exit::Invalid);
    }
    if scope.cfg.is_empty() {
        return Err(Error::Usage("this repository declares no private collections (add `extensions.ctx.private.collections` to the manifest; see docs/private.md)".into()));
    }
    let plan = batch::plan_encrypt(&scope.targets(&g.cwd, paths)?)?;
    plan.apply(&scope)?;
    let mut report = String::new();
    for c in &plan.changes {
        match &c.outcome {
            Outcome::Encrypted { recipients } => report.push_str(&format!(
                "encrypted  {}  to {recipients} recipient(s)\n",
                c.file
            )),
            Outcome::AlreadyEncrypted { stale: true } => report.push_str(&format!(
                "stale      {}  encrypted to an outdated recipient list: run `ctx private rekey`\n",
                c.file
            )),
            Outcome::Failed(e) => {
                let _ = p.err(&format!(
                    "error: {}: {e}\n  fix: correct the file, then run `ctx private encrypt {}`\n",
                    c.file, c.file
                ));
            }
            _ => {}
        }
    }
    let done = plan.count(|o| matches!(o, Outcome::Encrypted { .. }));
    let already = plan.count(|o| matches!(o, Outcome::AlreadyEncrypted { .. }));
    report.push_str(&format!(
        "{done} encrypted, {already} already encrypted, {} failed\n",
        plan.failed()
    ));
    crate::cli::io_result(p.out(&report))?;
    Ok(if plan.failed() > 0 {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}

pub fn rekey(g: &Global, p: &Printer, force: bool, ida: &IdentityArgs) -> Result<Exit> {
    let scope = Scope::load_for_write(g.dir.as_deref(), &g.cwd)?;
    if report_config(p, &scope) {
        return Ok(Exit::Invalid);
    }
    let ring = require_identity(keyring(p, ida)?, "rekey decrypts every private file")?;
    let plan = batch::plan_rekey(&scope, &ring, force)?;
    plan.apply(&scope)?;
    let mut report = String::new();
    let mut removed_any = false;
    for c in &plan.changes {
        match &c.outcome {
            Outcome::Plaintext => report.push_str(&format!(
                "PLAINTEXT  {}  run `ctx private encrypt {}`\n",
                c.file, c.file
            )),
            Outcome::Failed(e) => {
                let _ = p.err(&format!("error: {}: {e}\n", c.file));
            }
            Outcome::Rekeyed {
                recipients,
                added,
                removed,
            } => {
                report.push_str(&format!(
                    "rekeyed    {}  {recipients} recipient(s) (+{added} −{})\n",
                    c.file,
                    removed.len()
                ));
                for k in removed {
                    report.push_str(&format!("             removed {k}\n"));
                }
                removed_any |= !removed.is_empty();
            }
            _ => {}
        }
    }
    let changed = plan.count(|o| matches!(o, Outcome::Rekeyed { .. }));
    let current = plan.count(|o| matches!(o, Outcome::Current));
    report.push_str(&format!(
        "{changed} re-encrypted, {current} already current, {} failed\n",
        plan.failed()
    ));
    if removed_any {
        report.push_str("note: removed recipients can still read older versions in git history; rotate what they could see\n");
    }
    crate::cli::io_result(p.out(&report))?;
    Ok(if plan.failed() > 0 {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}
