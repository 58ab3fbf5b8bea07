//! `ctx audit show|verify`: read and check the hash-chained audit log the
//! manifest's `audit` block configures.

use clap::{Args, Subcommand};
use serde_json::Value;

use ctx_core::audit::Log;
use ctx_core::error::{Exit, Result};
use ctx_core::manifest::Manifest;

use super::{Global, Printer};

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
    #[arg(long, default_value = "human", value_parser = ["human", "jsonl"])]
    pub format: String,
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
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
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
    let skip = a.limit.map_or(0, |n| entries.len().saturating_sub(n));
    let mut s = String::new();
    if entries.is_empty() && a.format == "human" {
        let rel = log.path().strip_prefix(&m.root).unwrap_or(log.path());
        s.push_str(&format!("no audit events in {}\n", rel.display()));
    }
    for e in &entries[skip..] {
        if a.format == "jsonl" {
            s.push_str(&serde_json::to_string(&e.event).expect("JSON"));
            s.push('\n');
            continue;
        }
        let ev = &e.event;
        let get = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("-").to_string();
        s.push_str(&format!(
            "{:>5}  {}  {:<17} {}:{}  {:<8} {}\n",
            e.seq,
            get(ev, "at"),
            get(ev, "event"),
            get(&ev["actor"], "type"),
            get(&ev["actor"], "id"),
            get(ev, "outcome"),
            ev.get("bundle")
                .map(|b| format!("{} {}", get(b, "bundle_id"), get(b, "digest")))
                .unwrap_or_default()
        ));
    }
    super::io_result(p.product(&s, a.output.as_deref()))?;
    Ok(Exit::Ok)
}

fn verify(g: &Global, p: &Printer, a: &VerifyArgs) -> Result<Exit> {
    let (m, log) = log(g)?;
    let report = log.verify_and_rehead(a.rehead)?;
    let rel = |x: &std::path::Path| x.strip_prefix(&m.root).unwrap_or(x).display().to_string();
    let ok = report.problems.is_empty();
    let text = if a.format == "json" {
        let doc = serde_json::json!({
            "ok": ok,
            "log": rel(log.path()),
            "head": rel(log.head_path()),
            "entries": report.entries,
            "problems": report.problems,
            "notes": report.notes,
        });
        serde_json::to_string_pretty(&doc).expect("JSON") + "\n"
    } else {
        let mut s = String::new();
        for x in &report.problems {
            s.push_str(&format!("error: {x}\n"));
        }
        for x in &report.notes {
            s.push_str(&format!("note: {x}\n"));
        }
        if ok {
            s.push_str(&format!(
                "✓ {}: {} entries, chain and head intact\n",
                rel(log.path()),
                report.entries
            ));
        } else {
            s.push_str(&format!(
                "✗ {}: {} entries, {} problem(s)\n",
                rel(log.path()),
                report.entries,
                report.problems.len()
            ));
        }
        s
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(if ok { Exit::Ok } else { Exit::Invalid })
}
