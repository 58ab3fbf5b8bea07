//! `ctx request new|validate|evaluate`: Context Layer context requests and
//! the policy decisions made on them.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::exchange::evaluate::State;
use ctx_core::exchange::ops::decide::{self, EvaluateOptions};
use ctx_core::exchange::ops::request::{self, NewRequest};
use ctx_core::exchange::SpecVersion;

use super::exchange::{at, exchange, print_json, read_doc, reject, repo, CommonArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct RequestArgs {
    #[command(subcommand)]
    pub command: RequestCommand,
}

#[derive(Debug, Subcommand)]
pub enum RequestCommand {
    /// Write a new context request (checked before it is stored under .ctx/exchange/requests/).
    New(Box<NewArgs>),
    /// Check a request: schema, expiry, creation time, purpose code, wildcards, receipts, requester.
    Validate(ValidateArgs),
    /// Evaluate a request against the repository's policy: allow, allow_with_reductions, deny or needs_approval.
    #[command(
        long_about = "Evaluate a request against the repository's exchange policy and write the policy_decision.\n\nExit status: 0 allow or allow_with_reductions, 4 deny, 5 needs_approval (run `ctx approve`), 1 invalid input, 3 not found."
    )]
    Evaluate(EvaluateArgs),
}

fn parse_version(s: &str) -> std::result::Result<SpecVersion, String> {
    SpecVersion::parse(s).ok_or_else(|| format!("`{s}`: expected 0.2-draft or 0.1-draft"))
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The requester: an agent name, `role:<name>` or a principal URI.
    #[arg(long = "as", value_name = "REQUESTER")]
    pub requester: String,
    /// Who receives the context (default: the requester).
    #[arg(long)]
    pub recipient: Option<String>,
    /// May the recipient pass the context on? (`forbidden` or `allowed`)
    #[arg(long, default_value = "forbidden", value_parser = ["forbidden", "allowed"])]
    pub onward: String,
    /// Registered purpose code (e.g. draft.response, retrieve.context) or `x.`-namespaced.
    #[arg(long)]
    pub purpose_code: String,
    /// Free text explaining the purpose (informative only; never authorizes).
    #[arg(long)]
    pub purpose: Option<String>,
    /// Task kind (a lowercase name the policy lists, e.g. draft_only).
    #[arg(long, default_value = "retrieve_only")]
    pub task: String,
    /// The task's result is not shown to a person.
    #[arg(long)]
    pub hidden: bool,
    /// A selector: a predicate declared in ctx.exchange.predicates, or an object id (repeatable).
    #[arg(long = "select", value_name = "NAME", required = true)]
    pub selectors: Vec<String>,
    /// A requested action (repeatable, e.g. model.generate_text, memory.propose).
    #[arg(long = "action", value_name = "ACTION")]
    pub actions: Vec<String>,
    /// How long the recipient may keep the context, in seconds.
    #[arg(long, default_value_t = 600)]
    pub retention: u64,
    #[arg(long, default_value = "ephemeral", value_parser = ["ephemeral", "single_use"])]
    pub retention_mode: String,
    /// Receipt requirement: none, decision or operation.
    #[arg(long, default_value = "operation", value_parser = ["none", "decision", "operation"])]
    pub receipts: String,
    /// How long the request stays valid (e.g. 10m, 1h).
    #[arg(long, default_value = "10m")]
    pub expires_in: String,
    /// Wire form to write.
    #[arg(long, default_value = "0.2-draft", value_parser = parse_version)]
    pub spec_version: SpecVersion,
    /// Also write the request here.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The request file (`-` for stdin).
    pub file: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The request file (`-` for stdin).
    pub file: PathBuf,
    /// An approval written by `ctx approve` for this request.
    #[arg(long)]
    pub approval: Option<PathBuf>,
    /// Wire form of the decision (default: the request's own).
    #[arg(long, value_parser = parse_version)]
    pub spec_version: Option<SpecVersion>,
    /// Also write the decision here.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

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
    if let Some(out) = &a.output {
        super::io_result(p.product_json(&req, Some(out)))?;
    }
    print_json(p, &req)?;
    let _ = p.err(&format!("stored {}\n", path.display()));
    Ok(Exit::Ok)
}

fn validate(g: &Global, p: &Printer, a: &ValidateArgs) -> Result<Exit> {
    let c = &a.common;
    let doc = read_doc(&a.file)?;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let report = request::validate(&ex, &doc, at(c.at.as_deref())?);
    if c.json() {
        let problems: Vec<_> = report
            .problems
            .iter()
            .map(|x| json!({"code": x.code, "message": x.message}))
            .collect();
        print_json(p, &json!({"valid": report.ok(), "problems": problems}))?;
    } else if report.ok() {
        super::io_result(p.out(&format!("{}: valid context_request\n", a.file.display())))?;
    } else {
        let mut t = String::new();
        for x in &report.problems {
            t.push_str(&format!(
                "{}: {}: {}\n",
                a.file.display(),
                x.code,
                x.message
            ));
        }
        t.push_str(&format!(
            "{} problem(s); the request would be refused\n",
            report.problems.len()
        ));
        super::io_result(p.out(&t))?;
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
    if let Some(out) = &a.output {
        super::io_result(p.product_json(d, Some(out)))?;
    }
    print_json(p, d)?;
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
