//! `ctx promote ID`: an owner signs off the `canonical` or `approved` authority an
//! object already declares — one written by hand, one that predates sign-offs, or
//! one edited since its last sign-off. It never edits the object: raising an
//! authority is a new version (`ctx supersede ID --authority canonical --promote`),
//! so what was believed before stays on disk.

use crate::error::{Error, Result};
use crate::load::Repo;
use crate::model::{Authority, ObjectRef};
use crate::validate::{supersession, Index};

use super::signoff::{self, Pending, Standing};
use super::WriteError;

/// What `ctx promote` asks for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `id` or `id@version`.
    pub target: String,
    /// The authority the owner means to sign off; refused when the object declares
    /// another (a guard against signing off the wrong thing).
    pub authority: Option<Authority>,
    /// Who signs ([`signoff::signer`]).
    pub by: String,
    /// When (RFC 3339).
    pub at: String,
}

/// What a promotion will do.
#[derive(Debug)]
pub enum Outcome {
    /// The sign-off to record, and the object's key and authority.
    Record {
        pending: Box<Pending>,
        key: String,
        authority: Authority,
        file: String,
    },
    /// The current bytes are already signed off: nothing to write.
    AlreadySigned { key: String, by: String, at: String },
}

/// Plan the sign-off of the active version `req.target` names.
pub fn plan(repo: &Repo, req: &Request) -> Result<Outcome> {
    let m = &repo.manifest;
    let want = ObjectRef::parse(&req.target);
    let idx = Index::new(&repo.objects);
    let sup = supersession::analyse(&idx);
    let all = idx.resolve(&ObjectRef {
        id: want.id.clone(),
        version: None,
    });
    if all.is_empty() {
        return Err(Error::NotFound(format!(
            "no object `{}` in this repository",
            want.id
        )));
    }
    let active: Vec<usize> = all
        .iter()
        .copied()
        .filter(|i| !sup.superseded.contains(i))
        .filter(|&i| want.version.is_none() || repo.objects[i].version == want.version)
        .collect();
    let i = match active.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::NotFound(format!(
            "`{}` has no active version{}: superseded versions are history and need no sign-off",
            req.target,
            want.version.map(|v| format!(" {v}")).unwrap_or_default()
        )))
        }
        many => {
            let keys: Vec<String> = many.iter().map(|&i| repo.objects[i].key()).collect();
            return Err(Error::Usage(format!(
                "`{}` has {} active versions ({}); name one: `ctx promote {}`",
                want.id,
                many.len(),
                keys.join(", "),
                keys[0]
            )));
        }
    };
    let o = &repo.objects[i];
    if o.meta.faults.contains("authority") {
        return Err(Error::Invalid(format!(
            "{}: its `authority` does not parse; fix it first (nothing was written)",
            o.origin.file
        )));
    }
    let declared = o.meta.authority;
    if let Some(a) = req.authority {
        if a != declared {
            return Err(Error::Invalid(format!(
                "{} declares authority `{declared}`, not `{a}`: `ctx promote` signs off the authority an object \
                 declares and never edits it. To raise it, write a new version: \
                 `ctx supersede {} --authority {a} --promote` (nothing was written)",
                o.origin.file, o.id
            )));
        }
    }
    if !signoff::needed(declared) {
        return Err(Error::Invalid(format!(
            "{} has authority `{declared}`: only `canonical` and `approved` need a sign-off (nothing was written)",
            o.key()
        )));
    }
    if let Standing::Signed(s) = signoff::standing(m, o) {
        return Ok(Outcome::AlreadySigned {
            key: o.key(),
            by: s.by,
            at: s.at,
        });
    }
    let bytes = signoff::read_object_file(m, o).map_err(WriteError::from)?;
    let pending = signoff::plan(m, o, &bytes, req.by.clone(), req.at.clone(), "promote")?;
    Ok(Outcome::Record {
        pending: Box::new(pending),
        key: o.key(),
        authority: declared,
        file: o.origin.file.clone(),
    })
}

/// Sign off every active `canonical` or `approved` object that has no sign-off at
/// all — of those loaded from `files`, or of the whole repository when `files` is
/// None — and return the records planned. For `ctx init` (whoever creates a
/// repository owns the objects it starts with) and `ctx promote --all` (a repository
/// that predates sign-offs starts keeping them). An object whose record no longer
/// matches is left alone: an edit since a sign-off needs its own review.
pub fn missing(
    repo: &Repo,
    files: Option<&[&str]>,
    by: &str,
    at: &str,
    via: &str,
) -> Result<Vec<Pending>> {
    let m = &repo.manifest;
    let idx = Index::new(&repo.objects);
    let sup = supersession::analyse(&idx);
    let mut planned: Vec<Pending> = Vec::new();
    for (i, o) in repo.objects.iter().enumerate() {
        if sup.superseded.contains(&i)
            || !signoff::needed(o.meta.authority)
            || o.meta.faults.contains("authority")
            || files.is_some_and(|f| !f.contains(&o.origin.file.as_str()))
            || signoff::standing(m, o) != Standing::Missing
        {
            continue;
        }
        let bytes = signoff::read_object_file(m, o).map_err(WriteError::from)?;
        // Two versions of one id share a ledger: plan on top of the one planned already.
        let base = planned
            .iter()
            .position(|p| p.rel == signoff::rel_path(&o.id));
        let p = match base {
            Some(n) => signoff::plan_onto(&planned.remove(n), m, o, &bytes, by, at, via)?,
            None => signoff::plan(m, o, &bytes, by.to_string(), at.to_string(), via)?,
        };
        planned.push(p);
    }
    Ok(planned)
}
