//! `ctx discover QUERY --as REQUESTER`: a minimum-reveal answer to "do you
//! hold something like this?", charged to the requester's query budget.

use clap::Args;

use ctx_core::error::{Exit, Result};
use ctx_core::exchange::ops::discover::{self, DiscoverOptions};
use ctx_core::exchange::SpecVersion;

use super::exchange::{at, exchange, print_json, reject, repo, CommonArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// What to look for (plain words; only policy-approved fields are revealed).
    pub query: String,
    /// The requester: an agent name or `role:<name>`.
    #[arg(long = "as", value_name = "REQUESTER")]
    pub requester: String,
    /// Wire form of the response.
    #[arg(long, default_value = "0.2-draft", value_parser = |s: &str| SpecVersion::parse(s).ok_or_else(|| format!("`{s}`: expected 0.2-draft or 0.1-draft")))]
    pub spec_version: SpecVersion,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(g: &Global, p: &Printer, a: &DiscoverArgs) -> Result<Exit> {
    let c = &a.common;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let response = discover::discover(
        &ex,
        &DiscoverOptions {
            query: a.query.clone(),
            requester: a.requester.clone(),
            at: at(&g.clock, c.at.as_deref())?,
            version: a.spec_version,
        },
    )
    .map_err(|e| reject(g, p, c, e))?;
    print_json(p, &response)?;
    Ok(Exit::Ok)
}
