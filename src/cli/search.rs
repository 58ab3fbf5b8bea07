//! `ctx search <query>`: lexical search over what the consumer may read, as the
//! library's authorized view shows it (denied objects and redacted values never match).

use clap::Args;
use serde_json::{json, Value};

use ctx_core::disclose::{self, Release};
use ctx_core::error::{Exit, Result};

use super::args::{ConsumerArgs, TableFormat};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words to look for in ids, titles, tags, summaries and (redacted) content.
    pub query: String,
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Show at most this many hits, best first.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Only objects of this type.
    #[arg(long = "type")]
    pub kind: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TableFormat,
    /// Evaluate lifecycle at this RFC 3339 instant or date (default: now).
    #[arg(long, value_name = "WHEN", value_parser = super::args::parse_at)]
    pub at: Option<ctx_core::time::Instant>,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &SearchArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let kind = a.kind.as_deref();
    let found = disclose::search(
        &repo,
        &a.who.who(),
        g.clock.at(a.at),
        &a.query,
        &|o| kind.is_none_or(|t| o.kind() == t),
        a.limit,
        &Release::All,
    )?;
    let rows: Vec<Value> = found
        .hits
        .iter()
        .map(|(h, state)| {
            let o = &repo.objects[h.index];
            json!({"id": o.id, "version": o.version, "score": h.score, "type": o.kind(), "title": o.title(), "lifecycle": state.as_str()})
        })
        .collect();
    let text = super::list::rows_text(rows, a.format, &["id", "score", "type", "title"]);
    super::io_result(p.product(&text, a.output.as_deref()))?;
    let exit = if found.hits.is_empty() {
        Exit::Invalid
    } else {
        Exit::Ok
    };
    super::leave_to_exit(repo);
    Ok(exit)
}
