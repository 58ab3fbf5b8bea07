//! The repository as the `private` operations see it: the manifest, the
//! `ctx.private` configuration, every member file, and how a path named by
//! a user maps to members of private collections.

use std::path::{Path, PathBuf};

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::load::walk::{self, Member, MemberSource};
use crate::manifest::Manifest;
use crate::object::Format;

use super::config::{CollectionKeys, PrivateConfig};
use super::identity::Keyring;

/// The private side of a repository.
#[derive(Debug)]
pub struct Scope {
    pub m: Manifest,
    pub cfg: PrivateConfig,
    /// Problems in `extensions.ctx.private`.
    pub cfg_diags: Vec<Diagnostic>,
    /// Every member file (private or not), sorted.
    pub members: Vec<Member>,
    /// The repository lock, when loaded to write ([`Scope::load_for_write`]).
    lock: Option<crate::fs::RepoLock>,
}

impl Scope {
    /// Find the repository from `dir` or `cwd`, and sweep plaintext folders
    /// left by killed `private edit` runs (see [`super::scratch`]) and staged
    /// files of killed writers ([`crate::fs::tidy`]).
    pub fn load(dir: Option<&Path>, cwd: &Path) -> Result<Scope> {
        super::scratch::sweep_stale();
        let (m, _) = Manifest::discover(dir, cwd)?;
        crate::fs::tidy(&m.root);
        Ok(Scope::of(m, None))
    }

    /// [`Scope::load`] for `encrypt` and `rekey`: the repository lock is
    /// taken before the members are read and held while the scope lives, so
    /// the plan is made from what no other writer changes meanwhile.
    pub fn load_for_write(dir: Option<&Path>, cwd: &Path) -> Result<Scope> {
        super::scratch::sweep_stale();
        let (m, _) = Manifest::discover(dir, cwd)?;
        let lock = crate::fs::RepoLock::acquire(&m.root).map_err(|e| Error::io(&m.root, &e))?;
        let (m, _) = Manifest::discover(dir, cwd)?;
        Ok(Scope::of(m, Some(lock)))
    }

    fn of(m: Manifest, lock: Option<crate::fs::RepoLock>) -> Scope {
        let (cfg, cfg_diags) = PrivateConfig::from_manifest(&m);
        let (members, _) = walk::members(&m);
        Scope {
            m,
            cfg,
            cfg_diags,
            members,
            lock,
        }
    }

    /// Was the scope loaded under the repository lock?
    pub fn holds_lock(&self) -> bool {
        self.lock.is_some()
    }

    /// Does the `ctx.private` configuration have errors?
    pub fn config_failed(&self) -> bool {
        crate::validate::failed(&self.cfg_diags, false)
    }

    /// The private collection a member belongs to.
    pub fn keys_of(&self, member: &Member) -> Option<&CollectionKeys> {
        match &member.source {
            MemberSource::Collection { name, .. } => self.cfg.collection(name),
            MemberSource::Entry { .. } => None,
        }
    }

    pub fn private_members(&self) -> impl Iterator<Item = (&Member, &CollectionKeys)> {
        self.members
            .iter()
            .filter_map(|m| self.keys_of(m).map(|k| (m, k)))
    }

    /// "vault, family": the private collections, for messages.
    pub fn collection_names(&self) -> String {
        self.cfg
            .collections
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A path given by a user (relative to `cwd`), relative to the
    /// repository (`/`-separated). New files can be named too.
    pub fn rel(&self, cwd: &Path, path: &Path) -> Result<String> {
        crate::fs::confine::rel_in_root(&self.m.root, cwd, path)
            .map(String::from)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{} is outside the repository at {}",
                    path.display(),
                    self.m.root.display()
                ))
            })
    }

    /// The members `paths` name (files or folders; every private member
    /// without paths), sorted and unique. A path naming no private member
    /// is a usage error.
    pub fn targets(
        &self,
        cwd: &Path,
        paths: &[PathBuf],
    ) -> Result<Vec<(&Member, &CollectionKeys)>> {
        let mut targets: Vec<(&Member, &CollectionKeys)> = Vec::new();
        if paths.is_empty() {
            targets.extend(self.private_members());
        }
        for path in paths {
            let rel = self.rel(cwd, path)?;
            let before = targets.len();
            targets.extend(self.private_members().filter(|(m, _)| {
                rel.is_empty() || m.rel == rel || m.rel.starts_with(&format!("{rel}/"))
            }));
            if targets.len() == before {
                return Err(Error::Usage(format!(
                    "{} is not a member of a private collection (private collections: {})",
                    path.display(),
                    self.collection_names()
                )));
            }
        }
        targets.sort_by(|a, b| a.0.rel.cmp(&b.0.rel));
        targets.dedup_by(|a, b| a.0.rel == b.0.rel);
        Ok(targets)
    }

    /// The member (existing, or a new file a private collection would
    /// load) at `rel`, and its collection's keys.
    pub fn member_for(&self, rel: &str) -> Result<(Member, &CollectionKeys)> {
        if let Some(m) = self.members.iter().find(|m| m.rel == rel) {
            return match self.keys_of(m) {
                Some(k) => Ok((m.clone(), k)),
                None => Err(self.not_private(rel)),
            };
        }
        let path = crate::fs::RelPath::parse(rel).map_err(|e| Error::Usage(e.to_string()))?;
        if let Some((name, base)) = self.m.members.collection_of(&path) {
            if let Some(keys) = self.cfg.collection(name) {
                let member = Member {
                    abs: path.to_path(&self.m.root),
                    rel: path.clone(),
                    source: MemberSource::Collection {
                        name: (*name).into(),
                        base: base.as_str().into(),
                    },
                };
                return Ok((member, keys));
            }
        }
        Err(self.not_private(rel))
    }

    fn not_private(&self, rel: &str) -> Error {
        Error::Usage(format!(
            "{rel} is not in a private collection (private collections: {})",
            self.collection_names()
        ))
    }
}

/// The file format of a private member (only documents can be private).
pub fn format_of(rel: &str) -> Result<Format> {
    Format::from_path(rel).ok_or_else(|| {
        Error::Usage(format!(
            "{rel}: only .md, .yaml, .yml and .json files can be private"
        ))
    })
}

/// Find the identity for a run. A file named by `--identity` or
/// `CTX_AGE_IDENTITY` that does not exist is a usage error (exit 2), like
/// no identity at all: either way the user must point at one that exists.
pub fn find_identity(flags: &[PathBuf]) -> Result<Option<Keyring>> {
    Ok(Keyring::discover(flags)?)
}

/// An identity is required and there is none: a *usage* error (exit 2),
/// the same in every private command, naming the ways to give one.
pub fn require_identity(ring: Option<Keyring>, why: &str) -> Result<Keyring> {
    ring.ok_or_else(|| {
        Error::Usage(format!(
            "{why}: give an identity that can decrypt it (--identity FILE, CTX_AGE_IDENTITY, or ~/.config/ctx/age/identity.txt)"
        ))
    })
}
