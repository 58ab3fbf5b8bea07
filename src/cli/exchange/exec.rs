//! `ctx exchange exec`: run a command as a granted action of an opened bundle.
//! Its stdout is released only after the completion receipt is durable.

use serde_json::json;

use ctx_core::error::{Exit, Result};
use ctx_core::exchange::consumer::ExecOutcome;
use ctx_core::exchange::ops::{action, bundles};

use super::{consumer_options, exchange, print_json, reject, repo, ExecArgs};
use crate::cli::{Global, Printer};

pub fn run(g: &Global, p: &Printer, a: &ExecArgs) -> Result<Exit> {
    let c = &a.common;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let o = consumer_options(g, &a.who, c)?;
    let mut output = Vec::new();
    let report = bundles::exec(&ex, &o, &a.action, |input| {
        let run = action::run_command(&a.command, input);
        if let Some(e) = &run.spawn_error {
            let _ = p.err(&format!(
                "ctx exchange exec: cannot run {}: {e}\n",
                a.command[0]
            ));
        }
        output = run.stdout;
        run.result
    })
    .map_err(|e| reject(g, p, c, e))?;
    let exit = match &report.outcome {
        ExecOutcome::Success { .. } => Exit::Ok,
        ExecOutcome::Failure { .. } => Exit::Invalid,
        ExecOutcome::Indeterminate { error, .. } => {
            let pending = report
                .pending_path
                .as_ref()
                .map(|p| p.display().to_string());
            let _ = p.err(&format!(
                "INDETERMINATE_OUTCOME: the action ran, but its completion receipt could not be stored ({}: {}).\n  Dependent actions on this bundle are blocked. Fix the receipt store, then run `ctx receipts retry` (pending record: {}).\n",
                error.code,
                error.message,
                pending.unwrap_or_default()
            ));
            Exit::Indeterminate
        }
    };
    let (status, receipt) = (report.outcome.status(), report.outcome.receipt());
    crate::cli::io_result(p.out(&String::from_utf8_lossy(&output)))?;
    if c.json() {
        print_json(p, &json!({"outcome": status, "receipt": receipt}))?;
    } else {
        let id = receipt["id"].as_str().unwrap_or("");
        let _ = p.err(&format!("{}: {status} (receipt {id})\n", a.action));
    }
    Ok(exit)
}
