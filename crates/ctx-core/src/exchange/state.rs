//! Exchange state under `.ctx/exchange/`: requests, decisions, approvals,
//! bundles (with their provenance maps), proposals, pending receipts, and the
//! anchored receipt log. Files are content-addressed, written atomically,
//! never replaced, and written under the repository's write lock. Everything
//! that changes over time — consumption, revocation, approval use, proposal
//! status, discovery budgets — is derived from the receipt log, so it can be
//! rebuilt from the log alone.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::config::{ExchangeConfig, KeyPurpose};
use super::error::{fail, ClError, ClResult};
use super::receipts::ReceiptLog;
use crate::manifest::Manifest;
use crate::signing::{PublicKey, SigningKeyPair};

/// Kinds of stored exchange files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Decision,
    Approval,
    Bundle,
    Provenance,
    Proposal,
    Pending,
}

impl Kind {
    fn folder(self) -> &'static str {
        match self {
            Kind::Request => "requests",
            Kind::Decision => "decisions",
            Kind::Approval => "approvals",
            Kind::Bundle | Kind::Provenance => "bundles",
            Kind::Proposal => "proposals",
            Kind::Pending => "pending",
        }
    }
}

/// The state folder of one repository.
#[derive(Debug, Clone)]
pub struct StateDir {
    pub root: PathBuf,
    pub dir: PathBuf,
    /// The repository's write-lock file when the caller already knows it (a
    /// confined server cannot run git to find it); None: found per lock.
    pub lock_at: Option<PathBuf>,
}

impl StateDir {
    pub fn new(repo_root: &Path) -> StateDir {
        StateDir {
            root: repo_root.to_path_buf(),
            dir: repo_root.join(".ctx").join("exchange"),
            lock_at: None,
        }
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("receipts.jsonl")
    }

    pub fn anchor_path(&self) -> PathBuf {
        self.dir.join("receipts.anchor.jsonl")
    }

    /// Path of a stored object named by the hex tail of its id or digest.
    pub fn path(&self, kind: Kind, name: &str) -> PathBuf {
        let suffix = if kind == Kind::Provenance {
            ".provenance.json"
        } else {
            ".json"
        };
        self.dir.join(kind.folder()).join(format!("{name}{suffix}"))
    }

    /// Take the repository write lock (held until the guard drops).
    pub fn lock(&self) -> ClResult<crate::fs::RepoLock> {
        match &self.lock_at {
            Some(p) => crate::fs::RepoLock::acquire_at(p),
            None => crate::fs::RepoLock::acquire(&self.root),
        }
        .map_err(|e| {
            ClError::new(
                "STATE_UNAVAILABLE",
                format!(
                    "{}: cannot take the repository lock: {e}",
                    self.root.display()
                ),
            )
        })
    }

    /// Write a new file atomically. The same bytes already there is fine
    /// (content-addressed names); different bytes are never replaced.
    pub fn store(&self, kind: Kind, name: &str, value: &Value) -> ClResult<PathBuf> {
        let path = self.path(kind, name);
        let mut bytes = serde_json::to_vec_pretty(value).expect("JSON value");
        bytes.push(b'\n');
        if let Ok(existing) = std::fs::read(&path) {
            if existing == bytes {
                return Ok(path);
            }
            return fail(
                "STATE_CONFLICT",
                format!(
                    "{} already exists with other content; ctx never replaces exchange state",
                    path.display()
                ),
            );
        }
        let parent = path.parent().expect("state paths have a folder");
        std::fs::create_dir_all(parent)
            .map_err(|e| ClError::new("STATE_UNAVAILABLE", format!("{}: {e}", parent.display())))?;
        crate::fs::write_atomic(
            &path,
            &bytes,
            crate::fs::Mode::RepositoryDefault,
            crate::fs::Existing::Refuse,
        )
        .map_err(|e| {
            ClError::new(
                "STATE_UNAVAILABLE",
                format!("{}: cannot write: {e}", path.display()),
            )
        })?;
        Ok(path)
    }

    /// Remove a pending receipt once it is in the log.
    pub fn remove_pending(&self, name: &str) -> ClResult<()> {
        let p = self.path(Kind::Pending, name);
        match std::fs::remove_file(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => fail("STATE_UNAVAILABLE", format!("{}: {e}", p.display())),
        }
    }

    /// Every stored file of a kind, sorted by name, parsed.
    pub fn all(&self, kind: Kind) -> ClResult<Vec<(PathBuf, Value)>> {
        let dir = self.dir.join(kind.folder());
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return fail("STATE_UNAVAILABLE", format!("{}: {e}", dir.display())),
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                n.ends_with(".json") && !n.ends_with(".provenance.json") && !n.starts_with('.')
            })
            .collect();
        paths.sort();
        let mut out = Vec::new();
        for p in paths {
            out.push((p.clone(), read_json(&p)?));
        }
        Ok(out)
    }

    /// Find a stored object by its `id`. Objects are stored under the name
    /// of their id, so this reads one file; only a miss scans the folder (a
    /// request whose id came back with other content is kept under its
    /// digest instead).
    pub fn find(&self, kind: Kind, id: &str) -> ClResult<Option<(PathBuf, Value)>> {
        if let Some(hit) = self.named(kind, id, |v| &v["id"])? {
            return Ok(Some(hit));
        }
        Ok(self.all(kind)?.into_iter().find(|(_, v)| v["id"] == id))
    }

    /// The stored envelope of a bundle. Bundles are only ever stored under
    /// the name of their id, so this reads that one file and never scans.
    pub fn bundle(&self, bundle_id: &str) -> ClResult<Option<(PathBuf, Value)>> {
        self.named(Kind::Bundle, bundle_id, |e| &e["bundle"]["id"])
    }

    /// The file stored under the name of `id`, when it exists and `id_of` it is `id`.
    fn named(
        &self,
        kind: Kind,
        id: &str,
        id_of: impl Fn(&Value) -> &Value,
    ) -> ClResult<Option<(PathBuf, Value)>> {
        let path = self.path(kind, &name_of(id));
        if !path.is_file() {
            return Ok(None);
        }
        let v = read_json(&path)?;
        Ok((id_of(&v) == id).then_some((path, v)))
    }
}

/// Read a JSON file strictly (duplicate members refused).
pub fn read_json(path: &Path) -> ClResult<Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ClError::new("NOT_FOUND", format!("{}: {e}", path.display())))?;
    crate::json::parse(&text).map_err(|e| {
        ClError::new(
            "INVALID_JSON",
            format!("{}:{}:{}: {}", path.display(), e.line, e.column, e.message),
        )
    })
}

/// The hex tail of a `urn:cl:<kind>:<hex>` id or `sha256:<hex>` digest, for file names.
pub fn name_of(id_or_digest: &str) -> String {
    let tail = id_or_digest.rsplit(':').next().unwrap_or(id_or_digest);
    if tail.len() >= 16 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
        tail.to_string()
    } else {
        super::canon::hex_part(&super::canon::digest_bytes(id_or_digest.as_bytes())).to_string()
    }
}

/// Load a Context Layer private key by id and check its declared purpose
/// ([`declared_key`]), then that it matches its declared public half.
///
/// `held` is a key the caller already holds in memory (a server, the
/// conformance suite); otherwise the key is read from the user's key folder.
pub fn load_key(
    m: &Manifest,
    cfg: &ExchangeConfig,
    id: &str,
    purpose: KeyPurpose,
    held: Option<&SigningKeyPair>,
) -> ClResult<SigningKeyPair> {
    let declared = declared_key(m, cfg, id, purpose)?;
    let pair = match held {
        Some(k) => k.clone(),
        None => crate::keys::load(id, Some(&m.root))
            .map_err(|e| ClError::new("KEY_UNAVAILABLE", e.to_string()))?,
    };
    if pair.public_key() != *declared {
        return fail(
            "KEY_MISMATCH",
            format!("the private key `{id}` does not match the public key declared for it in extensions.ctx.exchange.keys"),
        );
    }
    Ok(pair)
}

/// The public key `id` is declared with, if it may sign for `purpose`. A key may
/// serve exactly one purpose: it must be declared under `ctx.exchange.keys` with
/// that purpose, and not also be trusted under `ctx.keys` (whose signatures are
/// domain-separated): the two signing inputs never share a key. Needs no private
/// key, so `ctx validate` checks the policy's key references with it.
pub fn declared_key<'c>(
    m: &Manifest,
    cfg: &'c ExchangeConfig,
    id: &str,
    purpose: KeyPurpose,
) -> ClResult<&'c PublicKey> {
    let Some((declared, declared_purpose)) = cfg.keys.get(id) else {
        return fail(
            "KEY_NOT_DECLARED",
            format!(
                "key `{id}` is not declared under extensions.ctx.exchange.keys with purpose {}; consumers would not trust it",
                purpose.as_str()
            ),
        );
    };
    if *declared_purpose != purpose {
        return fail(
            "KEY_PURPOSE_CONFLICT",
            format!(
                "key `{id}` is declared for {} signatures, not {}",
                declared_purpose.as_str(),
                purpose.as_str()
            ),
        );
    }
    let (ctx_keys, _) = crate::keys::declared(m);
    if ctx_keys.values().any(|k| k == declared) {
        return fail(
            "KEY_PURPOSE_CONFLICT",
            format!("key `{id}` is also trusted under extensions.ctx.keys for domain-separated signatures; use a separate key for the Context Layer"),
        );
    }
    if cfg
        .keys
        .iter()
        .any(|(other, (k, p))| other != id && k == declared && *p != purpose)
    {
        return fail(
            "KEY_PURPOSE_CONFLICT",
            format!("key `{id}` is declared for both bundle and anchor signatures; use one key per purpose"),
        );
    }
    Ok(declared)
}

/// Open the repository's receipt log. Without an anchor key configured it
/// cannot be opened (`RECEIPT_ANCHOR_REQUIRED`): evidence that nobody can
/// authenticate is not evidence.
pub fn open_log(
    m: &Manifest,
    cfg: &ExchangeConfig,
    state: &StateDir,
    held: &std::collections::BTreeMap<String, SigningKeyPair>,
) -> ClResult<ReceiptLog> {
    let anchor = match &cfg.anchor_key {
        Some(id) => Some((
            state.anchor_path(),
            load_key(m, cfg, id, KeyPurpose::Anchor, held.get(id))?,
        )),
        None => None,
    };
    ReceiptLog::open(&state.log_path(), anchor)
}
