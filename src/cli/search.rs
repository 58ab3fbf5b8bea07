//! `ctx search <query>`: lexical search over what the consumer may read, as the
//! library's authorized view shows it (denied objects and redacted values never match).

use clap::Args;
use serde_json::{json, Value};

use ctx_core::bundle::render;
use ctx_core::error::{Exit, Result};
use ctx_core::evidence::Record;

use super::view::{self, ConsumerArgs};
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
    #[arg(long, default_value = "table", value_parser = ["table", "json", "ndjson"])]
    pub format: String,
    /// Evaluate lifecycle at this RFC 3339 instant or date (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &SearchArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let v = view::open(&repo, &a.who, super::resolve::at_flag(a.at.as_deref())?)?;
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
    let text = match a.format.as_str() {
        "json" => render::json(&Value::Array(rows)),
        "ndjson" => rows.iter().map(|r| r.to_string() + "\n").collect(),
        _ => super::list::table(&rows, &["id", "score", "type", "title"]),
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(if hits.is_empty() {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}
