//! `ctx graph`: references, supersession, conflicts, dependencies, owners and
//! sources, as text, JSON or Graphviz DOT.

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::graph::{self, Options};

use ctx_core::view::View;

use super::args::{ConsumerArgs, GraphFormat};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// Start from this object (all its versions) instead of showing everything.
    #[arg(long, value_name = "ID", add = super::args::completion::objects())]
    pub root: Option<String>,
    /// Follow at most N links from --root, in either direction (default: no limit).
    #[arg(long, value_name = "N", requires = "root")]
    pub depth: Option<usize>,
    /// Add owner nodes (`owned_by` links).
    #[arg(long)]
    pub owners: bool,
    /// Add source nodes (the `sources[].uri` of each object).
    #[arg(long)]
    pub sources: bool,
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: GraphFormat,
    /// Evaluate lifecycle at this RFC 3339 instant or date (default: now).
    #[arg(long, value_name = "WHEN", value_parser = super::args::parse_at)]
    pub at: Option<ctx_core::time::Instant>,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &GraphArgs) -> Result<Exit> {
    // A graph shows links, never content; documents only for `--sources` (their uris).
    let load = ctx_core::load::LoadOptions {
        content: false,
        docs: a.sources,
        ..g.load_options(ctx_core::load::DEFAULT_MAX_FILE_SIZE)
    };
    let repo = ctx_core::load::open(g.dir.as_deref(), &g.cwd, &load)?;
    let v = View::open(&repo, &a.who.who(), g.clock.at(a.at))?;
    let opts = Options {
        owners: a.owners,
        sources: a.sources,
    };
    let mut gr = graph::build(&v, opts);
    if let Some(root) = &a.root {
        let roots = gr.find(root);
        if roots.is_empty() {
            return Err(Error::NotFound(format!(
                "no object `{root}` is visible here"
            )));
        }
        gr = gr.around(&roots, a.depth);
    }
    let text = match a.format {
        GraphFormat::Json => gr.json(),
        GraphFormat::Dot => gr.dot(),
        GraphFormat::Human => gr.text(),
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    drop((gr, v));
    super::leave_to_exit(repo);
    Ok(Exit::Ok)
}
