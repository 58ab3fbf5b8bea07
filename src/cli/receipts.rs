//! `ctx receipts list|show|verify|retry|supersede`: the anchored Context
//! Layer receipt log (`.ctx/exchange/receipts.jsonl`).

use clap::{Args, Subcommand};
use serde_json::json;

use ctx_core::error::{Exit, Result};
use ctx_core::exchange::ops::ledger::{self, ListOptions};

use super::exchange::{at, exchange, print_json, reject, repo, CommonArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ReceiptsArgs {
    #[command(subcommand)]
    pub command: ReceiptsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReceiptsCommand {
    /// List receipts (verifying the whole log and its anchor first).
    List(ListArgs),
    /// Print one receipt (id or a unique prefix of its hex).
    Show(ShowArgs),
    /// Verify the hash chain and the signed anchor (rollback, rewrite, unanchored suffix).
    Verify(OnlyCommon),
    /// Store completion receipts left pending by an indeterminate outcome (idempotent).
    Retry(OnlyCommon),
    /// Correct a receipt with a new one that supersedes it (the original stays).
    Supersede(SupersedeArgs),
}

#[derive(Debug, Args)]
pub struct OnlyCommon {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only receipts about this bundle id.
    #[arg(long)]
    pub bundle: Option<String>,
    /// Only receipts about this request id.
    #[arg(long)]
    pub request: Option<String>,
    /// Only receipts of this operation (e.g. bundle.issue, memory.propose).
    #[arg(long)]
    pub operation: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The receipt id.
    pub id: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct SupersedeArgs {
    /// The receipt to correct.
    pub id: String,
    /// The corrected outcome.
    #[arg(long, value_parser = ["success", "failure", "indeterminate"])]
    pub outcome: String,
    /// What the correction says (no payloads or secrets).
    #[arg(long)]
    pub summary: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(g: &Global, p: &Printer, a: &ReceiptsArgs) -> Result<Exit> {
    let c = match &a.command {
        ReceiptsCommand::List(x) => &x.common,
        ReceiptsCommand::Show(x) => &x.common,
        ReceiptsCommand::Verify(x) | ReceiptsCommand::Retry(x) => &x.common,
        ReceiptsCommand::Supersede(x) => &x.common,
    };
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    match &a.command {
        ReceiptsCommand::List(x) => {
            let rows = ledger::list(
                &ex,
                &ListOptions {
                    bundle: x.bundle.clone(),
                    request: x.request.clone(),
                    operation: x.operation.clone(),
                },
            )
            .map_err(|e| reject(g, p, c, e))?;
            if c.json() {
                print_json(p, &json!(rows.iter().map(listed_json).collect::<Vec<_>>()))?;
            } else {
                let mut t: String = rows.iter().map(listed_line).collect();
                t.push_str(&format!("{} receipt(s)\n", rows.len()));
                super::io_result(p.out(&t))?;
            }
        }
        ReceiptsCommand::Show(x) => {
            let r = ledger::show(&ex, &x.id).map_err(|e| reject(g, p, c, e))?;
            print_json(p, &listed_json(&r))?;
        }
        ReceiptsCommand::Verify(_) => {
            let s = ledger::verify(&ex).map_err(|e| reject(g, p, c, e))?;
            if c.json() {
                print_json(
                    p,
                    &json!({"ok": true, "entries": s.entries.len(), "tail_digest": s.tail_digest, "byte_length": s.byte_length}),
                )?;
            } else {
                super::io_result(p.out(&format!(
                    "receipt log verified: {} entries, chain intact, anchored (tail {})\n",
                    s.entries.len(),
                    s.tail_digest
                )))?;
            }
        }
        ReceiptsCommand::Retry(_) => {
            let r = ledger::retry(&ex).map_err(|e| reject(g, p, c, e))?;
            if c.json() {
                print_json(p, &json!({"completed": r.completed}))?;
            } else {
                let t: String = r
                    .completed
                    .iter()
                    .map(|id| format!("recorded {id}\n"))
                    .collect();
                super::io_result(p.out(if t.is_empty() {
                    "nothing pending\n"
                } else {
                    &t
                }))?;
            }
        }
        ReceiptsCommand::Supersede(x) => {
            let r = ledger::supersede(
                &ex,
                &x.id,
                &x.outcome,
                &x.summary,
                at(&g.clock, c.at.as_deref())?,
            )
            .map_err(|e| reject(g, p, c, e))?;
            print_json(p, &r)?;
        }
    }
    Ok(Exit::Ok)
}

fn listed_json(r: &ledger::Listed) -> serde_json::Value {
    json!({"sequence": r.sequence, "receipt": r.receipt, "superseded_by": r.superseded_by})
}

/// One line of `ctx receipts list`: sequence, time, operation, outcome, id.
fn listed_line(r: &ledger::Listed) -> String {
    let x = |k: &str| r.receipt[k].as_str().unwrap_or("").to_string();
    let by = r.superseded_by.as_ref();
    format!(
        "{:>4}  {}  {:<24} {:<13} {}{}\n",
        r.sequence,
        x("created_at"),
        x("operation"),
        x("outcome"),
        x("id"),
        by.map(|s| format!("  (superseded by {s})"))
            .unwrap_or_default()
    )
}
