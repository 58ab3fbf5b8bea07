//! `ctx history <id>`: the declared versions first (what the organization believed,
//! and when), then the git commits that touched their files. Works without git.

use clap::Args;
use ctx_core::error::{Exit, Result};
use ctx_core::history;

use ctx_core::time::Instant;
use ctx_core::view::View;

use super::args::{parse_at, ConsumerArgs, TextFormat};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The object id.
    #[arg(add = super::args::completion::objects())]
    pub id: String,
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Evaluate lifecycle states at this instant or date (default: now).
    #[arg(long, value_name = "WHEN", value_parser = parse_at)]
    pub at: Option<Instant>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &HistoryArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let v = View::open(&repo, &a.who.who(), g.clock.at(a.at))?;
    let h = history::query(&v, &a.id)?;
    if let Err(why) = &h.commits {
        let _ = p.err(&format!("note: {why}; showing declared history only\n"));
    }
    let text = if a.format == TextFormat::Json {
        ctx_core::bundle::render::json(&h.json())
    } else {
        h.text()
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(Exit::Ok)
}
