//! `ctx list`: the objects a consumer may see (the library's authorized view decides),
//! filtered; out-of-scope and withheld objects never appear.

use clap::Args;
use serde_json::{json, Value};

use ctx_core::bundle::render;
use ctx_core::diag::render::terminal_safe;
use ctx_core::disclose;
use ctx_core::error::{Exit, Result};
use ctx_core::object::ContextObject;
use ctx_core::time::Instant;

use super::args::{parse_at, ConsumerArgs, TableFormat};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Only objects of this type.
    #[arg(long = "type")]
    pub kind: Option<String>,
    /// Only objects in this layer.
    #[arg(long)]
    pub layer: Option<String>,
    /// Only objects of this authority (canonical, approved, reference, ...).
    #[arg(long)]
    pub authority: Option<String>,
    /// Only objects this owner owns.
    #[arg(long)]
    pub owner: Option<String>,
    /// Only objects carrying this tag.
    #[arg(long)]
    pub tag: Option<String>,
    /// Include superseded versions.
    #[arg(long)]
    pub include_historical: bool,
    /// Lifecycle is evaluated at this instant or date (default: now).
    #[arg(long, value_name = "WHEN", value_parser = parse_at)]
    pub at: Option<Instant>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TableFormat,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &ListArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let keep = |o: &ContextObject| {
        a.kind.as_deref().is_none_or(|t| o.kind() == t)
            && a.layer
                .as_deref()
                .is_none_or(|l| o.meta.layer.as_deref() == Some(l))
            && a.authority
                .as_deref()
                .is_none_or(|x| o.meta.authority.as_str() == x)
            && a.owner
                .as_deref()
                .is_none_or(|x| o.meta.owner.as_deref() == Some(x))
            && a.tag
                .as_deref()
                .is_none_or(|t| o.meta.tags.iter().any(|x| x == t))
    };
    let listing = disclose::list(
        &repo,
        &a.who.who(),
        g.clock.at(a.at),
        a.include_historical,
        &keep,
    )?;
    let rows: Vec<Value> = listing
        .shown
        .iter()
        .map(|(i, state)| {
            let o = &repo.objects[*i];
            json!({
                "id": o.id, "version": o.version, "type": o.kind(), "layer": o.meta.layer,
                "authority": o.meta.authority.as_str(), "owner": o.meta.owner, "lifecycle": state.as_str(),
                "title": o.title(), "file": o.origin.file,
            })
        })
        .collect();
    withheld_note(p, listing.withheld)?;
    let cols = ["id", "type", "layer", "authority", "owner", "lifecycle"];
    super::io_result(p.product(&rows_text(rows, a.format, &cols), a.output.as_deref()))?;
    super::leave_to_exit(repo);
    Ok(Exit::Ok)
}

/// Say on stderr that objects were left out for error-level findings.
pub fn withheld_note(p: &Printer, n: usize) -> Result<()> {
    if n > 0 {
        super::io_result(p.err(&format!(
            "note: {n} object(s) left out: error-level findings concern them (`ctx validate` shows them)\n"
        )))?;
    }
    Ok(())
}

/// Rows in a table format: people get an aligned table of `cols`.
pub fn rows_text(rows: Vec<Value>, format: TableFormat, cols: &[&str]) -> String {
    match format {
        TableFormat::Json => render::json(&Value::Array(rows)),
        TableFormat::Yaml => render::yaml(&Value::Array(rows)),
        TableFormat::Ndjson => rows.iter().map(|r| r.to_string() + "\n").collect(),
        TableFormat::Human => table(&rows, cols),
    }
}

/// A plain aligned table.
pub fn table(rows: &[Value], cols: &[&str]) -> String {
    let cell = |r: &Value, c: &str| -> String {
        match &r[c] {
            Value::Null => "-".into(),
            Value::String(s) => terminal_safe(s).into_owned(),
            other => other.to_string(),
        }
    };
    let mut width: Vec<usize> = cols.iter().map(|c| c.len()).collect();
    for r in rows {
        for (n, c) in cols.iter().enumerate() {
            width[n] = width[n].max(cell(r, c).chars().count());
        }
    }
    let line = |vals: Vec<String>| -> String {
        let mut s = vals
            .iter()
            .enumerate()
            .map(|(n, v)| format!("{v:<w$}", w = width[n]))
            .collect::<Vec<_>>()
            .join("  ");
        s.truncate(s.trim_end().len());
        s + "\n"
    };
    let mut out = line(cols.iter().map(|c| c.to_string()).collect());
    out.push_str(&line(width.iter().map(|w| "-".repeat(*w)).collect()));
    for r in rows {
        out.push_str(&line(cols.iter().map(|c| cell(r, c)).collect()));
    }
    out
}
