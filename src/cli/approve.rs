//! `ctx approve REQUEST|DECISION`: the approval surface. It shows who asks,
//! for what, why, for whom, which actions, for how long, onward disclosure and
//! the evidence to be written — every requester-supplied value quoted as
//! inert text — and records a single-use approval bound to the request and
//! policy digests.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::exchange::ops::decide;

use super::exchange::{at, exchange, print_json, read_doc, reject, repo, CommonArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// A request, or a `needs_approval` decision (its request is used).
    pub file: PathBuf,
    /// Approve without the interactive question (after reading the summary).
    #[arg(long)]
    pub yes: bool,
    /// Only show what would be approved.
    #[arg(long)]
    pub show: bool,
    /// How long the approval stays usable (never past the request's expiry).
    #[arg(long, default_value = "15m")]
    pub expires_in: String,
    /// Who approves (recorded as `urn:ctx:approver:<NAME>`).
    #[arg(long, default_value = "local")]
    pub approver: String,
    /// Also write the approval here.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(g: &Global, p: &Printer, a: &ApproveArgs) -> Result<Exit> {
    let c = &a.common;
    let valid_for = ctx_core::time::parse_duration(&a.expires_in)
        .filter(|d| *d > chrono::Duration::zero())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--expires-in `{}`: expected a duration such as 15m",
                a.expires_in
            ))
        })?;
    if a.approver.is_empty()
        || !a
            .approver
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err(Error::Usage(
            "--approver: letters, digits, '.', '_' and '-' only".into(),
        ));
    }
    let doc = read_doc(&a.file)?;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let now = at(&g.clock, c.at.as_deref())?;
    let request = decide::request_for_approval(&ex, &doc).map_err(|e| reject(g, p, c, e))?;
    let summary =
        decide::approval_summary(&ex, &request, now, valid_for).map_err(|e| reject(g, p, c, e))?;
    let text = decide::render_summary(&summary);
    if a.show {
        super::io_result(p.out(&text))?;
        return Ok(Exit::Ok);
    }
    if !c.json() {
        super::io_result(p.err(&text))?;
    }
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            return Err(Error::Usage(
                "approval needs a person: run in a terminal, or pass --yes after reading the summary (--show prints it)".into(),
            ));
        }
        let _ = p.err("\nApprove exactly this? Type `yes` to approve: ");
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| Error::io("<stdin>", &e))?;
        if answer.trim() != "yes" {
            let _ = p.err("not approved; nothing was written\n");
            return Ok(Exit::Invalid);
        }
    }
    let approver = format!("urn:ctx:approver:{}", a.approver);
    let (approval, path) =
        decide::approve(&ex, &summary, &approver, now).map_err(|e| reject(g, p, c, e))?;
    if let Some(out) = &a.output {
        super::io_result(p.product_json(&approval, Some(out)))?;
    }
    if c.json() {
        print_json(p, &json!({"approval": approval, "path": path}))?;
    } else {
        super::io_result(p.out(&format!(
            "approved: {}\nstored {}\nnext: ctx request evaluate {} --approval {}\n",
            approval["id"].as_str().unwrap_or(""),
            path.display(),
            a.file.display(),
            path.display()
        )))?;
    }
    Ok(Exit::Ok)
}
