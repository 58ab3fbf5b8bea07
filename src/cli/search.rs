//! `ctx search <query>`: lexical search over what the consumer may read, as the
//! library's authorized view shows it (denied objects and redacted values never match).

use clap::Args;
use serde_json::{json, Value};

use ctx_core::error::{Exit, Result};
use ctx_core::evidence::Record;

use ctx_core::view::View;

use super::args::{ConsumerArgs, TableFormat};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct SearchArgs {
    pub query: String,
    #[command(flatten)]
    pub who: ConsumerArgs,
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
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
    let v = View::open(&repo, &a.who.who(), g.clock.at(a.at))?;
    let kind = a.kind.as_deref();
    let hits = v.search(&a.query, &|o| kind.is_none_or(|t| o.kind() == t), a.limit);
    let rows: Vec<Value> = hits
        .iter()
        .map(|h| {
            let o = &repo.objects[h.index];
            json!({"id": o.id, "version": o.version, "score": h.score, "type": o.kind(), "title": o.title(), "lifecycle": v.lifecycle(h.index).as_str()})
        })
        .collect();
    ctx_core::evidence::record(
        &repo.manifest,
        Record::search(
            a.who.agent.as_deref(),
            &a.who.role,
            hits.iter().map(|h| repo.objects[h.index].id.clone()),
        ),
    )?;
    let text = super::list::rows_text(rows, a.format, &["id", "score", "type", "title"]);
    super::io_result(p.product(&text, a.output.as_deref()))?;
    let exit = if hits.is_empty() {
        Exit::Invalid
    } else {
        Exit::Ok
    };
    drop((hits, v));
    super::leave_to_exit(repo);
    Ok(exit)
}
