//! `ctx supersede <id>`: a new version that declares what it replaces. The previous
//! version stays on disk — that is what lets anyone answer "what did we believe in
//! March". Planned and applied by the library ([`ctx_core::write::plan`]).

use clap::Args;

use ctx_core::error::{Exit, Result};
use ctx_core::load::LoadOptions;
use ctx_core::write::plan::{self, Session};

use super::add::WriteArgs;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct SupersedeArgs {
    /// The id to supersede (`id@version` to replace one specific active version).
    #[arg(add = super::args::completion::objects())]
    pub id: String,
    #[command(flatten)]
    pub write: WriteArgs,
}

pub fn run(g: &Global, p: &Printer, a: &SupersedeArgs) -> Result<Exit> {
    let req = a.write.request(g)?;
    let s = Session::open(g.dir.as_deref(), &g.cwd, &LoadOptions::default())?;
    let plan = plan::supersede(&s.repo, &a.id, &req, &g.clock)?;
    super::add::finish(g, p, &s, &plan, a.write.dry_run)
}
