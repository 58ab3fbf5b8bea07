//! `ctx conformance <SUITE-DIR>`: run a conformance suite and report every case.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use ctx_core::conformance::{self, Verdict};
use ctx_core::error::{Exit, Result};

use super::args::TextFormat;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// Folder holding `conformance.json` (or the file itself).
    pub suite: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
    /// Write the report to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(g: &Global, p: &Printer, args: &ConformanceArgs) -> Result<Exit> {
    let dir = if args.suite.is_absolute() {
        args.suite.clone()
    } else {
        g.cwd.join(&args.suite)
    };
    let results = if ctx_core::exchange::suite::is_suite(&dir) {
        ctx_core::exchange::suite::run(&dir)?
    } else {
        conformance::run(&dir)?
    };
    let passed = results
        .iter()
        .filter(|r| r.verdict == Verdict::Passed)
        .count();
    let failed = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Failed(_)))
        .count();
    let not_run = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::NotRun(_)))
        .count();
    let text = if args.format == TextFormat::Json {
        let cases: Vec<_> = results
            .iter()
            .map(|r| {
                let (status, detail) = match &r.verdict {
                    Verdict::Passed => ("passed", None),
                    Verdict::Failed(d) => ("failed", Some(d.clone())),
                    Verdict::NotRun(d) => ("not-run", Some(d.clone())),
                };
                json!({"group": r.group, "case": r.name, "status": status, "detail": detail})
            })
            .collect();
        serde_json::to_string_pretty(
            &json!({"passed": passed, "failed": failed, "not_run": not_run, "cases": cases}),
        )
        .expect("json")
            + "\n"
    } else {
        let mut t = String::new();
        for r in &results {
            match &r.verdict {
                Verdict::Passed => t.push_str(&format!("✓ {:<10} {}\n", r.group, r.name)),
                Verdict::Failed(d) => {
                    t.push_str(&format!("✗ {:<10} {}\n    {d}\n", r.group, r.name))
                }
                Verdict::NotRun(d) => {
                    t.push_str(&format!("- {:<10} {} (not run: {d})\n", r.group, r.name))
                }
            }
        }
        t.push_str(&format!(
            "conformance: {passed} passed, {failed} failed, {not_run} skipped\n"
        ));
        t
    };
    super::io_result(p.product(&text, args.output.as_deref()))?;
    Ok(if failed > 0 { Exit::Invalid } else { Exit::Ok })
}
