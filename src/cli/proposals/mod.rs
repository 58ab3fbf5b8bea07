//! `ctx proposals list|show|approve|reject|expire|commit`: the one review
//! queue (`ctx_core::proposals`) for proposals from every door — `context_set`
//! over MCP and the Context Layer — with or without an exchange.

mod render;

use clap::{Args, Subcommand};
use serde_json::json;

use ctx_core::error::{Exit, Result};
use ctx_core::exchange::ops::proposals::Transition;
use ctx_core::exchange::view::ViewOptions;
use ctx_core::proposals::{CommitOptions, Entry, Queue, Reviewer};

use crate::cli::exchange::{at, cl, print_json, reject, repo, CommonArgs};
use crate::cli::{Global, Printer};

#[derive(Debug, Args)]
pub struct ProposalsArgs {
    #[command(subcommand)]
    pub command: ProposalsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ProposalsCommand {
    /// Every proposal with its current status.
    List(OnlyCommon),
    /// One proposal, its status and its receipts.
    Show(IdArgs),
    /// Approve (needs provenance: a proposal without sources stays pending).
    Approve(ReviewArgs),
    /// Reject (the proposal and its history stay).
    Reject(ReviewArgs),
    /// Let it lapse (recorded; nothing is deleted).
    Expire(ReviewArgs),
    /// Write an approved proposal as new object versions (supersede/add; never overwrite).
    Commit(CommitArgs),
}

#[derive(Debug, Args)]
pub struct OnlyCommon {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    /// Proposal id, or a unique prefix of its hex.
    pub id: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Proposal id, or a unique prefix of its hex.
    pub id: String,
    /// Recorded in the receipt (short; no payloads).
    #[arg(long, default_value = "")]
    pub reason: String,
    /// The person reviewing (default: `$USER`); receipts record `urn:ctx:reviewer:<NAME>`.
    #[arg(long = "as", visible_alias = "reviewer", value_name = "NAME")]
    pub reviewer: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct CommitArgs {
    /// Proposal id, or a unique prefix of its hex.
    pub id: String,
    /// Object type of objects the proposal adds.
    #[arg(long = "type")]
    pub kind: Option<String>,
    /// Authority of the written versions (default `observed`; canonical and approved need --promote).
    #[arg(long)]
    pub authority: Option<String>,
    /// Promote: you, a person, sign off canonical or approved authority.
    #[arg(long)]
    pub promote: bool,
    /// Show what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The person committing (default: `$USER`): named in the objects, the sign-off and the audit log.
    #[arg(long = "as", visible_alias = "reviewer", value_name = "NAME")]
    pub reviewer: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(g: &Global, p: &Printer, a: &ProposalsArgs) -> Result<Exit> {
    let c = match &a.command {
        ProposalsCommand::List(x) => &x.common,
        ProposalsCommand::Show(x) => &x.common,
        ProposalsCommand::Approve(x)
        | ProposalsCommand::Reject(x)
        | ProposalsCommand::Expire(x) => &x.common,
        ProposalsCommand::Commit(x) => &x.common,
    };
    let repo = repo(g)?;
    let q = Queue::open(&repo, ViewOptions { offline: g.offline }).map_err(cl)?;
    let now = at(&g.clock, c.at.as_deref())?;
    match &a.command {
        ProposalsCommand::List(_) => {
            let all = q.list(now).map_err(|e| reject(g, p, c, e))?;
            if c.json() {
                print_json(
                    p,
                    &json!(all.iter().map(Entry::summary).collect::<Vec<_>>()),
                )?;
            } else {
                let t = render::list(&all);
                crate::cli::io_result(p.out(&t))?;
            }
        }
        ProposalsCommand::Show(x) => {
            let r = q.show(&x.id, now).map_err(|e| reject(g, p, c, e))?;
            print_json(
                p,
                &json!({"id": r.id, "door": r.door, "status": r.status, "proposal": r.record, "history": r.history}),
            )?;
        }
        ProposalsCommand::Approve(x)
        | ProposalsCommand::Reject(x)
        | ProposalsCommand::Expire(x) => {
            let t = match &a.command {
                ProposalsCommand::Approve(_) => Transition::Approve,
                ProposalsCommand::Reject(_) => Transition::Reject,
                _ => Transition::Expire,
            };
            let reviewer = Reviewer::new(x.reviewer.as_deref());
            let r = q
                .transition(&x.id, t, &reviewer, &x.reason, now)
                .map_err(|e| reject(g, p, c, e))?;
            if c.json() {
                print_json(p, &r.summary())?;
            } else {
                crate::cli::io_result(p.out(&format!("{} is now {}\n", r.id, r.status)))?;
            }
        }
        ProposalsCommand::Commit(x) => {
            let done = q
                .commit(&CommitOptions {
                    id: x.id.clone(),
                    reviewer: Reviewer::new(x.reviewer.as_deref()),
                    kind: x.kind.clone(),
                    authority: x.authority.clone(),
                    promote: x.promote,
                    dry_run: x.dry_run,
                    at: now,
                })
                .map_err(|e| reject(g, p, c, e))?;
            let t = render::committed(&done);
            crate::cli::io_result(p.out(&t))?;
        }
    }
    Ok(Exit::Ok)
}
