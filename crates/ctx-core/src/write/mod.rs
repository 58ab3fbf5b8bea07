//! Controlled writes (`add`, `supersede`). Every check — authorization, schema,
//! promotion, and the repository staying valid — runs on the planned bytes
//! before anything touches disk; files are written atomically, a new file never
//! replaces an existing one, and one exclusive lock per repository serialises
//! writers so two concurrent writes cannot lose an update.

pub mod emit;
mod error;
pub mod input;
pub mod plan;
pub mod promote;
pub mod seal;
pub mod signoff;

use std::path::Path;

pub use error::{SignoffError, WriteError};

use serde_json::Value;

use crate::diag::{Diagnostic, Severity};
use crate::fs::{self, confine, Mode, RelPath};
use crate::load::matcher::Source;
use crate::load::parse::{self, Defaults};
use crate::load::walk::{Member, MemberSource};
use crate::load::Repo;
use crate::manifest::{roles, Manifest};
use crate::model::Authority;
use crate::object::ContextObject;
use crate::pattern::{principal_matches, Pattern};
use crate::resolve::authorize::{authorize, Principals};
use crate::resolve::Consumer;

/// The manifest extension granting consumers the right to write ids they do not own yet:
/// `extensions: { ctx.write: { <role or agent>: [<id pattern>, ...] } }`.
pub const WRITE_EXTENSION: &str = "ctx.write";

/// One file a write will create (or, for a version annotation, rewrite).
#[derive(Debug, Clone)]
pub struct FileWrite {
    /// Relative to the manifest folder, `/`-separated.
    pub rel: String,
    pub bytes: Vec<u8>,
    /// The bytes the file must still hold when it is replaced; None means "must not exist".
    pub replaces: Option<Vec<u8>>,
}

/// Which collection would load a file at `rel` (the loader's own matcher), or
/// None when nothing would.
pub fn member_source(m: &Manifest, rel: &str) -> Option<MemberSource> {
    let rel = RelPath::parse(rel).ok()?;
    let (name, base) = m.members.collection_of(&rel)?;
    Some(MemberSource::Collection {
        name: (*name).into(),
        base: base.as_str().into(),
    })
}

/// Where `add` puts a new object when `--file` is not given: the collection named
/// by the id's first segment, one folder per remaining segment (`policies.billing.late`
/// → `context/policies/billing/late.md`), when that path loads back as this id.
pub fn default_path(m: &Manifest, id: &str) -> Option<String> {
    let (first, rest) = id.split_once('.')?;
    let c = m.members.collection(first)?;
    let Source::Local(local) = &c.source else {
        return None;
    };
    let rel = format!("{}/{}.md", local.base, rest.replace('.', "/"));
    let rel = rel.trim_start_matches('/').to_string();
    match member_source(m, &rel)? {
        MemberSource::Collection { name, base } if parse::derive_id(&name, &base, &rel) == id => {
            Some(rel)
        }
        _ => None,
    }
}

/// Parse planned bytes exactly as the loader would; None when no collection loads the path.
pub fn parse_planned(m: &Manifest, rel: &str, bytes: &[u8]) -> Option<parse::Parsed> {
    let source = member_source(m, rel)?;
    let rel = RelPath::parse(rel).ok()?;
    let member = Member {
        abs: rel.to_path(&m.root),
        rel,
        source,
    };
    Some(parse::parse(
        &member,
        bytes,
        &Defaults::for_member(m, &member),
    ))
}

/// Is authority `a` a promotion over `before` (None for a new object)? Only the
/// authorities a sign-off covers ([`signoff::needed`]) count, and only when they rank
/// above what the id already held; `ctx add`, `ctx supersede` and a committed proposal
/// all refuse one without `--promote`.
pub fn is_promotion(m: &Manifest, a: Authority, before: Option<Authority>) -> bool {
    let rank = |x: Authority| {
        m.precedence
            .iter()
            .position(|p| *p == x)
            .unwrap_or(usize::MAX)
    };
    signoff::needed(a) && before.is_none_or(|b| rank(a) < rank(b))
}

/// May `consumer` write `candidate` (replacing `existing`, if any)? Reads never imply
/// writes: the grant must come from the existing object's `permissions.write` or from
/// the manifest's `ctx.write` extension; `permissions.deny` overrides every grant, and
/// a consumer may only write what it may also read.
pub fn authorize_write(
    m: &Manifest,
    consumer: &Consumer,
    candidate: &ContextObject,
    existing: Option<&ContextObject>,
) -> Result<(), WriteError> {
    let scope = roles::scope(m, &consumer.roles).map_err(|e| WriteError::Scope(e.to_string()))?;
    let names: Vec<&str> = std::iter::once(consumer.id.as_str())
        .chain(scope.principals.iter().map(String::as_str))
        .collect();
    let named = |list: &[String]| {
        list.iter()
            .any(|e| names.iter().any(|n| principal_matches(e, n)))
    };
    let who = format!("{} `{}`", consumer.kind.as_str(), consumer.id);
    for o in existing.into_iter().chain(std::iter::once(candidate)) {
        if named(&o.meta.deny) {
            return Err(WriteError::Denied {
                who,
                id: o.id.clone(),
            });
        }
        let p = Principals {
            consumer: &consumer.id,
            scope: &scope,
        };
        if authorize(o, &p).is_err() {
            return Err(WriteError::Unreadable {
                who,
                id: o.id.clone(),
            });
        }
    }
    let by_object = existing.is_some_and(|o| named(&o.meta.write));
    let by_manifest = m
        .extension(WRITE_EXTENSION)
        .and_then(Value::as_object)
        .is_some_and(|grants| {
            grants.iter().any(|(principal, patterns)| {
                names.iter().any(|n| principal_matches(principal, n))
                    && patterns.as_array().into_iter().flatten().any(|p| {
                        p.as_str()
                            .and_then(|p| Pattern::parse(p).ok())
                            .is_some_and(|p| p.covers(&candidate.id))
                    })
            })
        });
    if by_object || by_manifest {
        Ok(())
    } else {
        Err(WriteError::NoGrant {
            who,
            id: candidate.id.clone(),
            consumer: consumer.id.clone(),
        })
    }
}

/// Error findings the planned repository has that the current one does not.
pub fn new_errors(before: &[Diagnostic], after: &[Diagnostic]) -> Vec<Diagnostic> {
    let key = |d: &Diagnostic| (d.code, d.file.clone(), d.id.clone(), d.message.clone());
    let old: std::collections::HashSet<_> = before.iter().map(key).collect();
    after
        .iter()
        .filter(|d| d.severity == Severity::Error && !old.contains(&key(d)))
        .cloned()
        .collect()
}

/// The repository as it would be after the writes: `replaced` files dropped, `added` objects in.
pub fn planned_repo(repo: &Repo, replaced: &[String], added: Vec<ContextObject>) -> Repo {
    let mut objects: Vec<ContextObject> = repo
        .objects
        .iter()
        .filter(|o| !replaced.contains(&o.origin.file))
        .cloned()
        .collect();
    objects.extend(added);
    crate::load::sort_objects(&mut objects);
    Repo {
        manifest: repo.manifest.clone(),
        objects,
        diags: repo.diags.clone(),
        files: repo.files,
    }
}

/// Apply the writes as one transaction ([`stage`], then commit) with no
/// evidence. The caller holds the repository lock ([`crate::fs::RepoLock`]).
pub fn apply(root: &Path, writes: &[FileWrite]) -> crate::error::Result<()> {
    let mut txn = fs::Txn::new(root);
    stage(&mut txn, root, writes)?;
    txn.commit(())
        .map_err(|e| crate::evidence::record::txn_error(root, e))
}

/// Stage the writes into `txn`: annotations (replacements) first, then new
/// files. At commit a replacement is refused if the file changed since it was
/// read and keeps the file's mode; a new file is never created over an
/// existing one and gets the mode an editor would give it.
pub fn stage(txn: &mut fs::Txn, root: &Path, writes: &[FileWrite]) -> Result<(), WriteError> {
    let mut ordered: Vec<&FileWrite> = writes.iter().filter(|w| w.replaces.is_some()).collect();
    ordered.extend(writes.iter().filter(|w| w.replaces.is_none()));
    for w in ordered {
        let rel = RelPath::parse(&w.rel)
            .ok()
            .filter(|r| confine::is_plain(r))
            .ok_or_else(|| WriteError::NotPlain(w.rel.clone()))?;
        let path = rel.to_path(root);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| WriteError::Io {
                path: parent.to_path_buf(),
                why: e.to_string(),
            })?;
        }
        let staged = match &w.replaces {
            Some(expected) => txn.replace(&path, expected, &w.bytes, Mode::Preserve),
            None => txn.create(&path, &w.bytes, Mode::Preserve),
        };
        staged.map_err(|e| WriteError::Io {
            path: w.rel.clone().into(),
            why: e.to_string(),
        })?;
    }
    Ok(())
}
