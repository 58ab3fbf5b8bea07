//! The queue's own store, `.ctx/proposals/`: proposals from doors that have
//! no Context Layer session (`context_set` over MCP), one file per proposal,
//! and their review history beside them in `reviews/`. A record is written
//! once and never changes (its id is its digest, so an edit is detected); the
//! history file is rewritten atomically under the repository lock, and the
//! commit's entry lands in the same transaction as the objects it wrote.
//! Records stored by earlier versions of ctx have the same format and are
//! read where they are.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::exchange::error::{ClError, ClResult};
use crate::fs::{self, Existing, Mode};
use crate::load::Repo;
use crate::resolve::Consumer;
use crate::view::Who;

/// Where the store lives, relative to the repository root.
pub const STORE: &str = ".ctx/proposals";
/// The record format.
pub const FORMAT: &str = "ctx.memory-proposal.v0";
/// Id prefix of the store's proposals.
pub const PREFIX: &str = "prop_";

/// A value an agent proposed, before it is stored.
#[derive(Debug, Clone)]
pub struct Draft {
    pub target: String,
    pub value: String,
    /// The sensitivity tier the agent asked for, and its classification.
    pub sensitivity: Option<String>,
    pub classification: Option<String>,
    pub proposer: Consumer,
    /// The door: `mcp`.
    pub via: String,
    pub client: Option<String>,
    /// Why it is a proposal and not a write.
    pub reason: String,
}

/// A stored proposal: its id and where it is, relative to the root.
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: String,
    pub rel: String,
}

/// Store a proposal (under the repository lock, never over another file).
pub fn submit(repo: &Repo, d: &Draft) -> Result<Stored> {
    let root = &repo.manifest.root;
    let _lock = fs::RepoLock::acquire(root).map_err(|e| Error::io(root, &e))?;
    // The id is the record's digest and `created_at` has whole seconds: a
    // random part keeps two identical proposals in one second apart.
    let mut nonce = [0u8; 12];
    getrandom::fill(&mut nonce)
        .map_err(|e| Error::Invalid(format!("no randomness for a proposal id: {e}")))?;
    let mut record = json!({
        "format": FORMAT,
        "status": "pending_validation",
        "target": d.target,
        "value": d.value,
        "sensitivity": d.sensitivity,
        "classification": d.classification,
        "written_by": d.proposer.id,
        "proposer": {"type": d.proposer.kind.as_str(), "id": d.proposer.id, "roles": d.proposer.roles},
        "via": d.via,
        "client": d.client,
        "reason": d.reason,
        "created_at": crate::evidence::now(),
        "namespace": repo.manifest.id,
        "nonce": hex(&nonce),
    });
    let digest = crate::jcs::sha256(&record);
    let id = id_of(&digest);
    record["proposal_id"] = json!(id);
    record["digest"] = json!(digest);
    let rel = format!("{STORE}/{id}.json");
    let path = root.join(&rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    // The value may be confidential: readable by its owner only.
    fs::write_atomic(&path, &pretty(&record), Mode::Private, Existing::Refuse)
        .map_err(|e| Error::io(&path, &e))?;
    Ok(Stored { id, rel })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn id_of(digest: &str) -> String {
    let h = digest.trim_start_matches("sha256:");
    format!("{PREFIX}{}", &h[..24.min(h.len())])
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).expect("JSON value");
    b.push(b'\n');
    b
}

/// Every stored record, in name order (unreadable ones as errors, never skipped).
pub fn records(root: &Path) -> ClResult<Vec<(PathBuf, std::result::Result<Value, ClError>)>> {
    let dir = root.join(STORE);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(unavailable(&dir, e)),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(PREFIX))
        })
        .collect();
    paths.sort();
    Ok(paths
        .into_iter()
        .map(|p| {
            let v = fs::read_regular(&p, 1 << 20)
                .map_err(|e| ClError::new("STATE_UNAVAILABLE", format!("{}: {e}", p.display())))
                .and_then(|b| {
                    crate::json::parse_slice(&b).map_err(|e| {
                        ClError::new(
                            "INVALID_MEMORY_PROPOSAL",
                            format!("{}:{}: {}", p.display(), e.line, e.message),
                        )
                    })
                });
            (p, v)
        })
        .collect())
}

fn unavailable(p: &Path, e: std::io::Error) -> ClError {
    ClError::new("STATE_UNAVAILABLE", format!("{}: {e}", p.display()))
}

/// Is the record what was stored? Its digest covers every member but the id
/// and the digest, and the id is the digest's start.
pub fn verify(record: &Value) -> ClResult<()> {
    let bad = |why: &str| Err(ClError::new("INVALID_MEMORY_PROPOSAL", why.to_string()));
    if record["format"] != FORMAT {
        return bad("not a ctx.memory-proposal.v0 record");
    }
    let mut body = record.clone();
    let Some(obj) = body.as_object_mut() else {
        return bad("a proposal record is a JSON object");
    };
    let id = obj.remove("proposal_id");
    let digest = obj.remove("digest");
    let want = crate::jcs::sha256(&body);
    if digest.as_ref().and_then(Value::as_str) != Some(want.as_str())
        || id.as_ref().and_then(Value::as_str) != Some(id_of(&want).as_str())
    {
        return Err(ClError::new(
            "RECORD_INTEGRITY_MISMATCH",
            format!(
                "proposal {} changed after it was submitted (its digest does not match); reject it or remove the file",
                record["proposal_id"].as_str().unwrap_or("?")
            ),
        ));
    }
    if record["target"].as_str().is_none() || record["value"].as_str().is_none() {
        return bad("a proposal names a target id and a text value");
    }
    Ok(())
}

/// Who proposed it, as a consumer the view can judge.
pub fn proposer(record: &Value) -> Who {
    let p = &record["proposer"];
    let roles: Vec<String> = p["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    match (p["type"].as_str(), p["id"].as_str()) {
        (Some("agent"), Some(id)) => Who {
            agent: Some(id.to_string()),
            roles: Vec::new(),
        },
        _ => Who { agent: None, roles },
    }
}

/// The review history file of a proposal.
pub fn history_path(root: &Path, id: &str) -> PathBuf {
    root.join(STORE).join("reviews").join(format!("{id}.json"))
}

/// A proposal's review steps, and the file's bytes (to replace it only if unchanged).
pub fn history(root: &Path, id: &str) -> ClResult<(Vec<Value>, Option<Vec<u8>>)> {
    let p = history_path(root, id);
    let bytes = match fs::read_regular(&p, 1 << 20) {
        Ok(b) => b,
        Err(fs::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), None))
        }
        Err(e) => {
            return Err(ClError::new(
                "STATE_UNAVAILABLE",
                format!("{}: {e}", p.display()),
            ))
        }
    };
    let v = crate::json::parse_slice(&bytes).map_err(|e| {
        ClError::new(
            "STATE_UNAVAILABLE",
            format!("{}:{}: {}", p.display(), e.line, e.message),
        )
    })?;
    let steps = v["history"].as_array().cloned().ok_or_else(|| {
        ClError::new(
            "STATE_UNAVAILABLE",
            format!("{}: no `history` list", p.display()),
        )
    })?;
    Ok((steps, Some(bytes)))
}

/// The history file's new bytes with `step` added.
pub fn with_step(id: &str, steps: &[Value], step: Value) -> Vec<u8> {
    let mut all = steps.to_vec();
    all.push(step);
    pretty(&json!({"proposal": id, "history": all}))
}

/// Stage the history file into a transaction (created, or replaced if unchanged).
pub fn stage_history(
    txn: &mut fs::Txn,
    root: &Path,
    id: &str,
    old: Option<&[u8]>,
    bytes: &[u8],
) -> Result<()> {
    let p = history_path(root, id);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    match old {
        Some(old) => txn.replace(&p, old, bytes, Mode::Private),
        None => txn.create(&p, bytes, Mode::Private),
    }
    .map_err(|e| Error::Invalid(format!("{}: {e}", p.display())))
}

/// Record a review step alone (approve, reject, expire): its own transaction.
pub fn record_step(root: &Path, id: &str, old: Option<&[u8]>, bytes: &[u8]) -> Result<()> {
    let mut txn = fs::Txn::new(root);
    stage_history(&mut txn, root, id, old, bytes)?;
    txn.commit(())
        .map_err(|e| crate::evidence::record::txn_error(root, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Value {
        let mut r = json!({"format": FORMAT, "target": "notes.a", "value": "v", "created_at": "2026-01-01T00:00:00Z"});
        let d = crate::jcs::sha256(&r);
        r["proposal_id"] = json!(id_of(&d));
        r["digest"] = json!(d);
        r
    }

    #[test]
    fn a_record_is_checked_against_its_digest_and_id() {
        let r = record();
        assert!(verify(&r).is_ok());
        let mut edited = r.clone();
        edited["value"] = json!("w");
        assert_eq!(
            verify(&edited).unwrap_err().code,
            "RECORD_INTEGRITY_MISMATCH"
        );
        let mut renamed = r.clone();
        renamed["proposal_id"] = json!("prop_000000000000000000000000");
        assert_eq!(
            verify(&renamed).unwrap_err().code,
            "RECORD_INTEGRITY_MISMATCH"
        );
        assert_eq!(
            verify(&json!({"format": "x"})).unwrap_err().code,
            "INVALID_MEMORY_PROPOSAL"
        );
    }

    #[test]
    fn proposers_are_agents_or_roles() {
        let a =
            proposer(&json!({"proposer": {"type": "agent", "id": "helper", "roles": ["support"]}}));
        assert_eq!(a.agent.as_deref(), Some("helper"));
        let r =
            proposer(&json!({"proposer": {"type": "role", "id": "support", "roles": ["support"]}}));
        assert_eq!(r.roles, ["support"]);
        assert!(r.agent.is_none());
    }

    #[test]
    fn history_is_created_then_replaced_only_if_unchanged() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        assert!(history(r, "prop_1").unwrap().0.is_empty());
        let first = with_step("prop_1", &[], json!({"status": "approved"}));
        record_step(r, "prop_1", None, &first).unwrap();
        let (steps, bytes) = history(r, "prop_1").unwrap();
        assert_eq!(steps[0]["status"], "approved");
        let second = with_step("prop_1", &steps, json!({"status": "committed"}));
        assert!(record_step(r, "prop_1", Some(b"stale"), &second).is_err());
        record_step(r, "prop_1", bytes.as_deref(), &second).unwrap();
        assert_eq!(history(r, "prop_1").unwrap().0.len(), 2);
    }
}
