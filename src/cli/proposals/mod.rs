//! `ctx proposals list|show|approve|reject|expire|commit`: review memory
//! proposals and commit approved ones through the governed write path.

mod render;

use clap::{Args, Subcommand};
use serde_json::json;

use ctx_core::error::{Exit, Result};
use ctx_core::exchange::ops::proposals::{self, CommitOptions, Reviewed, Transition};

use crate::cli::exchange::{at, exchange, print_json, reject, repo, CommonArgs};
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
    /// Who reviews (recorded as `urn:ctx:reviewer:<NAME>`).
    #[arg(long, default_value = "local")]
    pub reviewer: String,
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
    /// Authority of the written versions.
    #[arg(long)]
    pub authority: Option<String>,
    /// Permit canonical or approved authority.
    #[arg(long)]
    pub promote: bool,
    /// Show what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Who commits (recorded as `urn:ctx:reviewer:<NAME>` and in the sign-off).
    #[arg(long, default_value = "local")]
    pub reviewer: String,
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
    let ex = exchange(g, &repo, c)?;
    let now = at(&g.clock, c.at.as_deref())?;
    match &a.command {
        ProposalsCommand::List(_) => {
            let all = proposals::list(&ex, now).map_err(|e| reject(g, p, c, e))?;
            if c.json() {
                print_json(
                    p,
                    &json!(all.iter().map(Reviewed::summary).collect::<Vec<_>>()),
                )?;
            } else {
                let t = render::list(&all);
                crate::cli::io_result(p.out(&t))?;
            }
        }
        ProposalsCommand::Show(x) => {
            let r = proposals::show(&ex, &x.id, now).map_err(|e| reject(g, p, c, e))?;
            print_json(
                p,
                &json!({"status": r.status, "proposal": r.proposal, "history": r.history}),
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
            let reviewer = proposals::reviewer_urn(&x.reviewer);
            let r = proposals::transition(&ex, &x.id, t, &reviewer, &x.reason, now)
                .map_err(|e| reject(g, p, c, e))?;
            if c.json() {
                print_json(p, &r.summary())?;
            } else {
                crate::cli::io_result(p.out(&format!(
                    "{} is now {}\n",
                    r.proposal["id"].as_str().unwrap_or(""),
                    r.status
                )))?;
            }
        }
        ProposalsCommand::Commit(x) => {
            let done = proposals::commit(
                &ex,
                &CommitOptions {
                    id: x.id.clone(),
                    reviewer: proposals::reviewer_urn(&x.reviewer),
                    kind: x.kind.clone(),
                    authority: x.authority.clone(),
                    promote: x.promote,
                    dry_run: x.dry_run,
                    at: now,
                },
            )
            .map_err(|e| reject(g, p, c, e))?;
            let t = render::committed(&done);
            crate::cli::io_result(p.out(&t))?;
        }
    }
    Ok(Exit::Ok)
}
