//! `ctx promote ID[@VERSION]`: record an owner's sign-off of the `canonical` or
//! `approved` authority an object declares (one written by hand, one that
//! predates sign-offs, one edited since). The library plans it
//! ([`ctx_core::write::promote`]); this file parses, calls and prints ids only.

use clap::Args;

use ctx_core::error::{Exit, Result};
use ctx_core::load::LoadOptions;
use ctx_core::model::Authority;
use ctx_core::write::plan::Session;
use ctx_core::write::promote::{self, Outcome, Request};
use ctx_core::write::signoff;

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// The object to sign off (`id@version` when several versions are active).
    #[arg(add = super::args::completion::objects())]
    pub id: String,
    /// The authority you mean to sign off; refused if the object declares another.
    #[arg(long, value_parser = ["canonical", "approved"])]
    pub authority: Option<String>,
    /// Who signs off (recorded as `human:NAME`); default: the user running ctx.
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
    /// Show what would be recorded, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(g: &Global, p: &Printer, a: &PromoteArgs) -> Result<Exit> {
    let s = Session::open(g.dir.as_deref(), &g.cwd, &LoadOptions::default())?;
    let req = Request {
        target: a.id.clone(),
        authority: a.authority.as_deref().and_then(Authority::parse),
        by: match &a.by {
            Some(name) => format!("human:{name}"),
            None => signoff::signer(None, &[]),
        },
        at: g.clock.stamp(),
    };
    let out = match promote::plan(&s.repo, &req)? {
        Outcome::AlreadySigned { key, by, at } => {
            format!("{key} is already signed off (by {by} at {at}); nothing to record\n")
        }
        Outcome::Record {
            pending,
            key,
            authority,
            file,
        } => {
            let what = format!(
                "{key} ({file}) as {authority}, by {}, in {}",
                pending.record.by, pending.rel
            );
            if a.dry_run {
                format!("dry run: would sign off {what}; nothing was written\n")
            } else {
                signoff::write(&s.repo.manifest.root, &pending)?;
                format!("signed off {what}\ncommit {} with the object\n", pending.rel)
            }
        }
    };
    super::io_result(p.out(&out))?;
    Ok(Exit::Ok)
}
