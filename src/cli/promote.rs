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
    #[arg(add = super::args::completion::objects(), required_unless_present = "all")]
    pub id: Option<String>,
    /// Sign off every active canonical or approved object that has no sign-off yet
    /// (a repository that predates sign-offs). Objects edited since their sign-off are
    /// left for one-by-one review.
    #[arg(long, conflicts_with_all = ["id", "authority"])]
    pub all: bool,
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
    let by = match &a.by {
        Some(name) => format!("human:{name}"),
        None => signoff::signer(None, &[]),
    };
    let Some(id) = &a.id else {
        return all(g, p, &s, &by, a.dry_run);
    };
    let req = Request {
        target: id.clone(),
        authority: a.authority.as_deref().and_then(Authority::parse),
        by,
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
                format!(
                    "signed off {what}\ncommit {} with the object\n",
                    pending.rel
                )
            }
        }
    };
    super::io_result(p.out(&out))?;
    Ok(Exit::Ok)
}

/// `--all`: every object without any sign-off, one line each.
fn all(g: &Global, p: &Printer, s: &Session, by: &str, dry_run: bool) -> Result<Exit> {
    let planned = promote::missing(&s.repo, None, by, &g.clock.stamp(), "promote")?;
    let mut out = String::new();
    if !dry_run {
        signoff::write_all(&s.repo.manifest.root, &planned)?;
    }
    for pending in &planned {
        let r = &pending.record;
        let key = match r.version {
            Some(v) => format!("{}@{v}", pending.rel_id()),
            None => pending.rel_id().to_string(),
        };
        out.push_str(&format!(
            "{} {key} as {}, by {by}, in {}\n",
            if dry_run {
                "would sign off"
            } else {
                "signed off"
            },
            r.authority,
            pending.rel
        ));
    }
    out.push_str(&match (planned.len(), dry_run) {
        (0, _) => "every canonical and approved object has a sign-off record; nothing to record\n"
            .to_string(),
        (n, true) => format!("dry run: {n} sign-off(s); nothing was written\n"),
        (n, false) => format!(
            "{n} sign-off(s) recorded; commit {}/ with the objects\n",
            signoff::DIR
        ),
    });
    super::io_result(p.out(&out))?;
    Ok(Exit::Ok)
}
