//! `ctx history <id>`: the declared versions first (what the organization believed,
//! and when), then the git commits that touched their files. Works without git.

use std::fmt::Write as _;

use clap::Args;
use serde_json::{json, Value};

use ctx_core::error::{Error, Exit, Result};
use ctx_core::git::Git;

use super::view::{self, ConsumerArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The object id.
    pub id: String,
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Evaluate lifecycle states at this instant or date (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// Output format.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &HistoryArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let at = super::resolve::at_flag(a.at.as_deref())?;
    let v = view::open(&repo, &a.who, at)?;
    // Objects are sorted by id, then version: the visible ones of this id, oldest first.
    let versions: Vec<(usize, ctx_core::model::Lifecycle)> = v
        .visible(true)
        .into_iter()
        .filter(|(i, _)| repo.objects[*i].id == a.id)
        .collect();
    if versions.is_empty() {
        return Err(Error::NotFound(format!(
            "no object `{}` is visible here",
            a.id
        )));
    }
    let mut files: Vec<String> = versions
        .iter()
        .map(|(i, _)| repo.objects[*i].origin.file.clone())
        .collect();
    files.sort();
    files.dedup();
    let git = Git::discover(&repo.manifest.root);
    let commits = match &git {
        Some(git) => match git.log(&files) {
            Ok(c) => Some(c),
            Err(e) => {
                let _ = p.err(&format!("note: {e}; showing declared history only\n"));
                None
            }
        },
        None => {
            let _ = p.err("note: not a git work tree (or git is not installed); showing declared history only\n");
            None
        }
    };
    let rows: Vec<Value> = versions
        .iter()
        .map(|&(i, state)| {
            let o = &repo.objects[i];
            json!({
                "version": o.version,
                "lifecycle": state.as_str(),
                "authority": o.meta.authority.as_str(),
                "updated": o.meta.updated.map(|t| ctx_core::time::format(&t)),
                "file": o.origin.file,
                "supersedes": o.meta.supersedes.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
                // Only a successor this consumer may see is named.
                "superseded_by": v.successor(i).map(|s| repo.objects[s].key()),
            })
        })
        .collect();
    let text = if a.format == "json" {
        let commits_json = commits.as_ref().map(|cs| {
            cs.iter()
                .map(|c| json!({"hash": c.hash, "date": c.date, "author": c.author, "subject": c.subject}))
                .collect::<Vec<_>>()
        });
        ctx_core::bundle::render::json(&json!({
            "id": a.id,
            "versions": rows,
            "commits": commits_json,
        }))
    } else {
        let mut out = format!("History of {}\n\n", a.id);
        let cell = |v: &Value| v.as_str().map(str::to_string).unwrap_or_else(|| "-".into());
        let table: Vec<[String; 5]> = rows
            .iter()
            .map(|r| {
                [
                    r["version"]
                        .as_u64()
                        .map(|v| format!("v{v}"))
                        .unwrap_or_else(|| "-".into()),
                    cell(&r["lifecycle"]),
                    cell(&r["authority"]),
                    cell(&r["updated"]),
                    cell(&r["file"]),
                ]
            })
            .collect();
        let mut w = [0usize; 5];
        for row in &table {
            for (n, c) in row.iter().enumerate() {
                w[n] = w[n].max(c.chars().count());
            }
        }
        for (row, r) in table.iter().zip(&rows) {
            let mut line = format!(
                "  {:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                w0 = w[0],
                w1 = w[1],
                w2 = w[2],
                w3 = w[3]
            );
            if let Some(s) = r["superseded_by"].as_str() {
                let _ = write!(line, "  → superseded by {s}");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if let Some(cs) = &commits {
            out.push_str("\nCommits:\n");
            if cs.is_empty() {
                out.push_str("  (none: the files are not committed yet)\n");
            }
            for c in cs {
                let short = &c.hash[..c.hash.len().min(8)];
                let _ = writeln!(out, "  {short}  {}  {}  {}", c.date, c.author, c.subject);
            }
        }
        out
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(Exit::Ok)
}
