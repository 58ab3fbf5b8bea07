//! `ctx search <query>`: lexical search over what the consumer may read.
//! Authorization runs first, so results never reveal a denied object.

use clap::Args;
use serde_json::{json, Value};

use ctx_core::bundle::render;
use ctx_core::error::{Exit, Result};
use ctx_core::resolve::rank;

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
}

/// Ranked hits over what the view shows, best first: `(object index, score)`,
/// only objects the query matches. Shared by `ctx search` and `ctx mcp`.
pub fn hits(
    repo: &ctx_core::load::Repo,
    v: &view::View,
    query: &str,
    kind: Option<&str>,
) -> Vec<(usize, f64)> {
    let candidates: Vec<usize> = v
        .visible
        .iter()
        .map(|(i, _)| *i)
        .filter(|&i| kind.is_none_or(|t| repo.objects[i].kind() == t))
        .collect();
    let scores = rank::scores(&repo.objects, &candidates, Some(query));
    let mut hits: Vec<(usize, f64)> = candidates
        .into_iter()
        .zip(scores)
        .filter(|(_, s)| *s > 0.0)
        .collect();
    hits.sort_by(|x, y| {
        y.1.partial_cmp(&x.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(repo.objects[x.0].id.cmp(&repo.objects[y.0].id))
    });
    hits
}

pub fn run(g: &Global, p: &Printer, a: &SearchArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let v = view::view(&repo, &a.who, chrono::Utc::now(), false)?;
    let mut hits = hits(&repo, &v, &a.query, a.kind.as_deref());
    hits.truncate(a.limit);
    let rows: Vec<Value> = hits
        .iter()
        .map(|&(i, s)| {
            let o = &repo.objects[i];
            json!({"id": o.id, "version": o.version, "score": s, "type": o.kind(), "title": o.title()})
        })
        .collect();
    let text = match a.format.as_str() {
        "json" => render::json(&Value::Array(rows)),
        "ndjson" => rows.iter().map(|r| r.to_string() + "\n").collect(),
        _ => super::list::table(&rows, &["id", "score", "type", "title"]),
    };
    super::io_result(p.out(&text))?;
    Ok(if hits.is_empty() {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}
