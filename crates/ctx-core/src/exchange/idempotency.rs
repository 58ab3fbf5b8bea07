//! `Idempotency-Key` for mutating gateway calls (seed 000 §10.1): the first
//! answer to (caller, route, key) is kept under `.ctx/exchange/idempotency/`;
//! the same key with the same body gets that answer again, the same key with
//! another body is a conflict. Files are named by a digest of the triple (the
//! key itself is never stored), written atomically and never replaced, so a
//! replay survives a restart and two processes agree on the first answer.

use std::path::PathBuf;

use serde_json::json;

use super::canon;
use super::error::{fail, ClError, ClResult};
use super::state::{read_json, StateDir};

/// Longest accepted key (an opaque client string; UUIDs are 36).
pub const MAX_KEY_LEN: usize = 255;

/// A kept answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub status: u16,
    pub body: String,
    /// Headers the answer carried (`location`, version).
    pub headers: Vec<(String, String)>,
}

/// What a key means for this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Not seen: perform the call, then [`Store::save`] its answer.
    Fresh,
    /// Seen with the same body: answer this again, do nothing.
    Replay(Stored),
    /// Seen with another body: refuse (`IDEMPOTENCY_KEY_REUSED`).
    Conflict,
}

/// The idempotency folder of one repository.
pub struct Store {
    dir: PathBuf,
}

/// Check a key's syntax: visible ASCII, 1..=255 characters.
pub fn check_key(key: &str) -> ClResult<()> {
    if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| (0x21..0x7f).contains(&b))
    {
        return fail(
            "INVALID_IDEMPOTENCY_KEY",
            format!("Idempotency-Key must be 1 to {MAX_KEY_LEN} visible ASCII characters (a UUID is a good choice)"),
        );
    }
    Ok(())
}

impl Store {
    pub fn new(state: &StateDir) -> Store {
        Store {
            dir: state.dir.join("idempotency"),
        }
    }

    fn path(caller: &str, route: &str, key: &str, dir: &std::path::Path) -> PathBuf {
        let id = canon::digest(&json!([caller, route, key]));
        dir.join(format!("{}.json", canon::hex_part(&id)))
    }

    /// What `key` means for a call by `caller` on `route` with this body digest.
    pub fn lookup(
        &self,
        caller: &str,
        route: &str,
        key: &str,
        body_digest: &str,
    ) -> ClResult<Lookup> {
        let p = Store::path(caller, route, key, &self.dir);
        if !p.exists() {
            return Ok(Lookup::Fresh);
        }
        let v = read_json(&p)?;
        if v["body_digest"] != body_digest {
            return Ok(Lookup::Conflict);
        }
        let headers = v["headers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| Some((h[0].as_str()?.to_string(), h[1].as_str()?.to_string())))
            .collect();
        Ok(Lookup::Replay(Stored {
            status: v["status"]
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .unwrap_or(500),
            body: v["response"].as_str().unwrap_or_default().to_string(),
            headers,
        }))
    }

    /// Keep the first answer (a second save of the same key keeps the first).
    pub fn save(
        &self,
        caller: &str,
        route: &str,
        key: &str,
        body_digest: &str,
        s: &Stored,
    ) -> ClResult<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            ClError::new("STATE_UNAVAILABLE", format!("{}: {e}", self.dir.display()))
        })?;
        let p = Store::path(caller, route, key, &self.dir);
        let v = json!({
            "body_digest": body_digest,
            "status": s.status,
            "response": s.body,
            "headers": s.headers.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        });
        let mut bytes = serde_json::to_vec_pretty(&v).expect("JSON");
        bytes.push(b'\n');
        match crate::fs::write_atomic(
            &p,
            &bytes,
            crate::fs::Mode::RepositoryDefault,
            crate::fs::Existing::Refuse,
        ) {
            Ok(_) => Ok(()),
            Err(_) if p.exists() => Ok(()),
            Err(e) => fail(
                "STATE_UNAVAILABLE",
                format!("{}: cannot write: {e}", p.display()),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_and_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let st = Store::new(&StateDir::new(dir.path()));
        let d = canon::digest_bytes(b"body");
        assert_eq!(st.lookup("a", "POST /x", "k1", &d).unwrap(), Lookup::Fresh);
        let s = Stored {
            status: 201,
            body: "{}".into(),
            headers: vec![("location".into(), "/x/1".into())],
        };
        st.save("a", "POST /x", "k1", &d, &s).unwrap();
        assert_eq!(
            st.lookup("a", "POST /x", "k1", &d).unwrap(),
            Lookup::Replay(s)
        );
        let other = canon::digest_bytes(b"other");
        assert_eq!(
            st.lookup("a", "POST /x", "k1", &other).unwrap(),
            Lookup::Conflict
        );
        // Keys are per caller and route.
        assert_eq!(st.lookup("b", "POST /x", "k1", &d).unwrap(), Lookup::Fresh);
        assert!(
            check_key("").is_err() && check_key("a b").is_err() && check_key("0f0e-uuid").is_ok()
        );
    }
}
