//! `ctx provider conformance FILE`: run the request-authentication vectors
//! (`delegated-request-auth-v1.json`) and list every vector's result.

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::provider::request_auth::conformance;

use crate::cli::args::TextFormat;
use crate::cli::{Global, Printer};

#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The vectors file (delegated-request-auth-v1.json).
    pub vectors: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
}

pub fn run(g: &Global, p: &Printer, a: &ConformanceArgs) -> Result<Exit> {
    let path = crate::cli::input::absolute(&g.cwd, &a.vectors);
    let bytes = crate::cli::input::read_file(&path)?;
    let report =
        conformance::run(&bytes).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
    let text = if a.format == TextFormat::Json {
        serde_json::to_string_pretty(&report.to_json()).expect("JSON") + "\n"
    } else {
        let mut s = String::new();
        for o in &report.outcomes {
            s.push_str(&format!(
                "{}  {:<8}  {:<17}  {}\n",
                if o.passed { "pass" } else { "FAIL" },
                o.group.as_str(),
                o.id,
                o.observed
            ));
        }
        s.push_str(&format!(
            "{} passed, {} failed ({} vectors)\n",
            report.passed(),
            report.failed(),
            report.outcomes.len()
        ));
        s
    };
    crate::cli::io_result(p.out(&text))?;
    Ok(if report.failed() == 0 {
        Exit::Ok
    } else {
        Exit::Invalid
    })
}
