//! `ctx propose CANDIDATE --bundle ENVELOPE --as RECIPIENT`: submit agent-written
//! memory as a `memory_update_proposal` through a bundle that grants
//! `memory.propose`. Nothing is written to the repository.

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Exit, Result};
use ctx_core::exchange::ops::bundles::ConsumerOptions;
use ctx_core::exchange::ops::proposals;

use super::exchange::{at, exchange, print_json, read_bytes, read_doc, reject, repo, CommonArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ProposeArgs {
    /// The candidate: {operation, proposed_claims, provenance_handles, rationale} (`-`: stdin).
    pub candidate: PathBuf,
    /// The bundle envelope the recipient opened.
    #[arg(long)]
    pub bundle: PathBuf,
    /// The recipient submitting it.
    #[arg(long = "as", value_name = "RECIPIENT")]
    pub recipient: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(g: &Global, p: &Printer, a: &ProposeArgs) -> Result<Exit> {
    let c = &a.common;
    let candidate = read_doc(&a.candidate)?;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let o = ConsumerOptions {
        envelope: read_bytes(&a.bundle)?,
        recipient: a.recipient.clone(),
        at: at(&g.clock, c.at.as_deref())?,
        trust: None,
    };
    let (proposal, path) =
        proposals::submit(&ex, &o, &candidate).map_err(|e| reject(g, p, c, e))?;
    print_json(p, &proposal)?;
    let needs = proposal["approval_requirement"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let _ = p.err(&format!(
        "proposal {} is pending_validation (needs: {needs}); stored {}\n",
        proposal["id"].as_str().unwrap_or(""),
        path.display()
    ));
    Ok(Exit::Ok)
}
