//! `ctx provider verify`: check an envelope as a host would, record the acceptance
//! (one result per turn, nonces, replays) and release the exact context bytes.

use std::path::Path;

use serde_json::json;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::provider::{self, ContextFile, StateDir, TrustStore};

use super::args::VerifyArgs;
use super::{abs, binding, read};
use crate::cli::args::TextFormat;
use crate::cli::{Global, Printer};

/// The acceptance state a verification records into: `--state`, else the
/// default folder (per repository, or per user); None only with `--no-state`.
fn state_dir(g: &Global, a: &VerifyArgs) -> Result<Option<StateDir>> {
    if a.no_state {
        return Ok(None);
    }
    let dir = match &a.state {
        Some(d) => abs(g, d),
        None => {
            // Only the manifest's folder matters here, so a manifest that does not parse
            // still places the state in its repository.
            let repo = match ctx_core::manifest::discover::locate(g.dir.as_deref(), &g.cwd) {
                Ok(found) => found.path.parent().map(Path::to_path_buf),
                Err(Error::ManifestNotFound { .. }) if g.dir.is_none() => None,
                Err(e) => return Err(e),
            };
            provider::default_state_dir(repo.as_deref()).ok_or_else(|| {
                Error::Usage(
                    "no folder for the acceptance state: pass --state DIR (or --no-state to verify without replay protection)"
                        .into(),
                )
            })?
        }
    };
    StateDir::open(dir)
        .map(Some)
        .map_err(|e| Error::Invalid(e.to_string()))
}

pub fn run(g: &Global, p: &Printer, a: &VerifyArgs) -> Result<Exit> {
    let bytes = read(g, &a.envelope)?;
    let trust = TrustStore::from_json_slice(&read(g, &a.trust)?, a.allow_fixture_keys)
        .map_err(|e| Error::Invalid(format!("{}: {e}", a.trust.display())))?;
    let binding = binding(g, &a.binding)?;
    // The default clock keeps full precision: truncating it would accept an
    // envelope for up to a second after an `expires_at` with a fraction.
    let at = a.at.unwrap_or(g.clock.precise());
    let state = state_dir(g, a)?;
    let to_stdout = a.context_out.as_deref() == Some(Path::new("-"));
    // Claimed before verification, so a refused file reserves nothing.
    let claimed = match &a.context_out {
        Some(out) if !to_stdout => {
            let path = abs(g, out);
            Some(ContextFile::claim(path.clone()).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Error::Invalid(format!(
                    "{}: already exists; verified context is never written over a file (nothing was verified or reserved)",
                    path.display()
                )),
                _ => Error::io(&path, &e),
            })?)
        }
        _ => None,
    };
    let result = provider::verify_envelope(&bytes, &trust, &binding, at, state.as_ref());
    let json_out = a.format == TextFormat::Json;
    let recorded = match &state {
        Some(s) => format!(" (state {})", s.path().display()),
        None => " (--no-state: nothing was recorded, so this turn has no one-result, nonce or replay protection)".into(),
    };
    let state_json = json!(state.as_ref().map(|s| s.path().display().to_string()));
    match result {
        Ok(acc) => {
            match (claimed, &acc.context) {
                (Some(file), Some(ctx)) => {
                    let path = file.path().to_path_buf();
                    file.fill(ctx.as_bytes())
                        .map_err(|e| Error::io(&path, &e))?;
                }
                (None, Some(ctx)) if to_stdout => crate::cli::io_result(p.out(ctx))?,
                // A withholding has no bytes: the unfilled claim is removed when dropped.
                _ => {}
            }
            let text = if json_out {
                serde_json::to_string_pretty(
                    &json!({"accepted": true, "evidence": acc.evidence(), "state": state_json}),
                )
                .expect("JSON")
                    + "\n"
            } else {
                let what = match &acc.context_sha256 {
                    Some(h) => format!(
                        "inject of {} bytes (sha256 {h})",
                        acc.context.as_ref().map_or(0, String::len)
                    ),
                    None => format!(
                        "withhold ({})",
                        acc.withhold_reason.as_ref().map_or("", |r| r.code.as_str())
                    ),
                };
                format!(
                    "accepted: {what}\n  provider {} {} instance {}, key {}\n  acceptance: {}{recorded}\n  note: this proves the provider authorised it for this turn, not that it was delivered\n",
                    acc.provider.id, acc.provider.version, acc.provider.instance_id, acc.key_id, acc.acceptance.as_str()
                )
            };
            // With --context-out -, stdout carries the exact bytes only.
            if to_stdout {
                let _ = p.err(&text);
            } else {
                crate::cli::io_result(p.out(&text))?;
            }
            Ok(Exit::Ok)
        }
        Err(f) => {
            drop(claimed); // removes the placeholder
            let text = if json_out {
                serde_json::to_string_pretty(
                    &json!({"accepted": false, "failure": f.to_json(), "state": state_json}),
                )
                .expect("JSON")
                    + "\n"
            } else {
                format!("rejected: {f}\n")
            };
            crate::cli::io_result(p.out(&text))?;
            Ok(Exit::Invalid)
        }
    }
}
