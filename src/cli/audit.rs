//! `ctx audit show|verify`: read and check the hash-chained audit log the
//! manifest's `audit` block configures.

use clap::{Args, Subcommand};
use ctx_core::audit::repository::{self, Repair};
use ctx_core::audit::{render, Log};
use ctx_core::error::{Exit, Result};
use ctx_core::manifest::Manifest;

use super::args::TextFormat;
use super::{Global, Printer};

/// `audit show --format`: one line per event, or the stored lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[value(alias = "text")]
    Human,
    /// The stored JSON lines, unchanged.
    #[value(alias = "ndjson")]
    Jsonl,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print the most recent audit events.
    Show(ShowArgs),
    /// Check the hash chain, every event's schema, and the head (truncation).
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Show only the last N events.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// `human` (one line per event) or `jsonl` (the stored lines).
    #[arg(long, value_enum, default_value = "human")]
    pub format: LogFormat,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// After a clean chain check, re-anchor a lost head file at the last entry
    /// (truncation before this point can then no longer be detected).
    #[arg(long)]
    pub rehead: bool,
    /// Repair now what killed commands left (a torn final line, entries after
    /// the head, an unanchored receipt suffix, a half-done write), as the next
    /// write would; damage is never repaired.
    #[arg(long)]
    pub repair: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

fn log(g: &Global) -> Result<(Manifest, Log)> {
    let (m, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let log = Log::for_manifest(&m)?;
    Ok((m, log))
}

pub fn run(g: &Global, p: &Printer, a: &AuditArgs) -> Result<Exit> {
    match &a.command {
        AuditCommand::Show(x) => show(g, p, x),
        AuditCommand::Verify(x) => verify(g, p, x),
    }
}

fn show(g: &Global, p: &Printer, a: &ShowArgs) -> Result<Exit> {
    let (m, log) = log(g)?;
    let entries = log.read()?;
    let mut s = String::new();
    if entries.is_empty() && a.format == LogFormat::Human {
        let rel = log.path().strip_prefix(&m.root).unwrap_or(log.path());
        s.push_str(&format!("no audit events in {}\n", rel.display()));
    }
    s.push_str(&render::entries(
        &entries,
        a.limit,
        a.format == LogFormat::Jsonl,
    ));
    super::io_result(p.product(&s, a.output.as_deref()))?;
    Ok(Exit::Ok)
}

fn verify(g: &Global, p: &Printer, a: &VerifyArgs) -> Result<Exit> {
    let (m, log) = log(g)?;
    let how = Repair {
        rehead: a.rehead,
        repair: a.repair,
    };
    let checked = repository::check(&m, how)?;
    let rel = |x: &std::path::Path| x.strip_prefix(&m.root).unwrap_or(x).display().to_string();
    let ok = checked.iter().all(|c| c.report.ok());
    let audit = checked
        .iter()
        .find(|c| c.kind == "audit")
        .expect("the audit log is always checked");
    let others = checked.iter().filter(|c| c.kind != "audit" && !quiet(c));
    let text = if a.format == TextFormat::Json {
        let mut doc = audit.report.json(&rel(log.path()), &rel(log.head_path()));
        doc["ok"] = ok.into();
        doc["logs"] = checked
            .iter()
            .map(|c| {
                let mut d = c.report.json(&rel(&c.path), "");
                d["kind"] = c.kind.into();
                d.as_object_mut().map(|o| o.remove("head"));
                d
            })
            .collect();
        serde_json::to_string_pretty(&doc).expect("JSON") + "\n"
    } else {
        let mut t = audit.report.text(&rel(log.path()));
        for c in others {
            t.push_str(&c.report.text_for(c.kind, &rel(&c.path)));
        }
        t
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(if ok { Exit::Ok } else { Exit::Invalid })
}

/// A log with nothing to say (no interrupted write) is not listed.
fn quiet(c: &repository::Checked) -> bool {
    c.kind == "writes" && c.report.problems.is_empty() && c.report.pending.is_empty()
}
