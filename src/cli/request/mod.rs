//! `ctx request new|validate|evaluate`: Context Layer context requests and
//! the policy decisions made on them.

mod args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::exchange::evaluate::State;
use ctx_core::exchange::ops::decide::{self, EvaluateOptions};
use ctx_core::exchange::ops::request::{self, NewRequest};

use std::path::Path;

use serde_json::Value;

use crate::cli::exchange::{at, exchange, print_json, read_doc, reject, repo, CommonArgs};
use crate::cli::printer::output_file;
use crate::cli::{Global, Printer};
pub use args::{EvaluateArgs, NewArgs, RequestArgs, RequestCommand, ValidateArgs};

pub fn run(g: &Global, p: &Printer, a: &RequestArgs) -> Result<Exit> {
    match &a.command {
        RequestCommand::New(x) => new(g, p, x),
        RequestCommand::Validate(x) => validate(g, p, x),
        RequestCommand::Evaluate(x) => evaluate(g, p, x),
    }
}

fn new(g: &Global, p: &Printer, a: &NewArgs) -> Result<Exit> {
    let c = &a.common;
    let expires_in = ctx_core::time::parse_duration(&a.expires_in)
        .filter(|d| *d > chrono::Duration::zero())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--expires-in `{}`: expected a duration such as 10m or 1h",
                a.expires_in
            ))
        })?;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let (req, path) = request::create(
        &ex,
        &NewRequest {
            requester: a.requester.clone(),
            recipient: a.recipient.clone(),
            onward_disclosure: a.onward.clone(),
            purpose_code: a.purpose_code.clone(),
            purpose: a.purpose.clone(),
            task_kind: a.task.clone(),
            user_visible: !a.hidden,
            selectors: a.selectors.clone(),
            actions: if a.actions.is_empty() {
                vec!["model.generate_text".into()]
            } else {
                a.actions.clone()
            },
            retention_mode: a.retention_mode.clone(),
            retention_seconds: a.retention,
            receipts: a.receipts.clone(),
            expires_in,
            client: None,
            authenticated_by: None,
            at: at(c.at.as_deref())?,
            version: a.spec_version,
        },
    )
    .map_err(|e| reject(p, c, e))?;
    emit(p, c, &req, a.output.as_deref())?;
    let _ = p.err(&format!("stored {}\n", path.display()));
    Ok(Exit::Ok)
}

/// The document goes to `-o FILE` (atomically) or, without one (or with `-o -`), to
/// stdout, as `ctx exchange issue` does; `--format json` prints it with `-o` too.
fn emit(p: &Printer, c: &CommonArgs, doc: &Value, output: Option<&Path>) -> Result<()> {
    match output_file(output) {
        Some(out) => {
            crate::cli::io_result(p.product_json(doc, Some(out)))?;
            if c.json() {
                print_json(p, doc)?;
            }
            Ok(())
        }
        None => print_json(p, doc),
    }
}

fn validate(g: &Global, p: &Printer, a: &ValidateArgs) -> Result<Exit> {
    let c = &a.common;
    let doc = read_doc(&a.file)?;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let report = request::validate(&ex, &doc, at(c.at.as_deref())?);
    if c.json() {
        print_json(p, &report.json())?;
    } else if report.ok() {
        crate::cli::io_result(p.out(&format!("{}: valid context_request\n", a.file.display())))?;
    } else {
        let file = a.file.display();
        let mut t = String::new();
        for x in &report.problems {
            t.push_str(&format!("{file}: {}: {}\n", x.code, x.message));
        }
        t.push_str(&format!(
            "{} problem(s); the request would be refused\n",
            report.problems.len()
        ));
        crate::cli::io_result(p.out(&t))?;
    }
    Ok(if report.ok() { Exit::Ok } else { Exit::Invalid })
}

fn evaluate(g: &Global, p: &Printer, a: &EvaluateArgs) -> Result<Exit> {
    let c = &a.common;
    let request = read_doc(&a.file)?;
    let approval = a.approval.as_deref().map(read_doc).transpose()?;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let decided = decide::evaluate(
        &ex,
        &EvaluateOptions {
            request,
            approval,
            at: at(c.at.as_deref())?,
            version: a.spec_version,
        },
    )
    .map_err(|e| reject(p, c, e))?;
    let d = &decided.evaluation.decision;
    emit(p, c, d, a.output.as_deref())?;
    let reasons = d["reason_codes"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let _ = p.err(&format!(
        "{} ({reasons}); stored {}\n",
        decided.evaluation.state.as_str(),
        decided.path.display()
    ));
    Ok(match decided.evaluation.state {
        State::Allow | State::AllowWithReductions => Exit::Ok,
        State::Deny => Exit::Denied,
        State::NeedsApproval => {
            let _ = p.err(&format!(
                "approve it with `ctx approve {}`\n",
                a.file.display()
            ));
            Exit::NeedsApproval
        }
    })
}
