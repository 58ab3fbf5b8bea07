//! The spec owner's vectors (`delegated-request-auth-v1.json`) run against
//! [`Authenticator`]: the known-answer request, each negative mutation and
//! each stateful sequence, every one in a fresh private folder with a real
//! keyring and ledger and an injected clock.
//!
//! A negative vector passes only when it is refused at the check the
//! mutation targets ([`expected_stage`]) and nothing was reserved; a
//! stateful one when every step gives its listed result.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Barrier};

use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    keyring, revoke, rotate, sign_request, Authenticator, HttpRequest, Keyring, Rejection, Stage,
    DEFAULT_OVERLAP_SECS, PROFILE,
};
use crate::canonical::sha256_hex;

/// The vectors file.
#[derive(Debug, Clone, Deserialize)]
pub struct Vectors {
    pub profile: String,
    pub fixture_only: bool,
    pub secret_base64: String,
    pub method: String,
    pub authority: String,
    pub target: String,
    pub body_utf8: String,
    pub provider_id: String,
    pub instance_id: String,
    pub key_id: String,
    pub issued: i64,
    pub expires: i64,
    pub nonce: String,
    pub body_sha256: String,
    pub signature: String,
    pub negative_vectors: Vec<Negative>,
    pub stateful_vectors: Vec<Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Negative {
    pub id: String,
    pub mutation: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Positive,
    Negative,
    Stateful,
}

impl Group {
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Positive => "positive",
            Group::Negative => "negative",
            Group::Stateful => "stateful",
        }
    }
}

/// One vector's result; `observed` says what happened, step by step.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub id: String,
    pub group: Group,
    pub passed: bool,
    pub observed: String,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub outcomes: Vec<Outcome>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.passed).count()
    }
    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.passed()
    }
    pub fn count(&self, g: Group) -> usize {
        self.outcomes.iter().filter(|o| o.group == g).count()
    }
    pub fn to_json(&self) -> Value {
        json!({
            "profile": PROFILE,
            "passed": self.passed(),
            "failed": self.failed(),
            "vectors": self.outcomes.iter().map(|o| json!({
                "id": o.id, "group": o.group.as_str(), "passed": o.passed, "observed": o.observed,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The check a negative mutation must be refused at.
pub fn expected_stage(mutation: &str) -> Option<Stage> {
    Some(match mutation {
        "remove_all_auth_headers" | "duplicate_signature" => Stage::Headers,
        // Neither is one of the profile's routes.
        "change_method" | "change_target" => Stage::Framing,
        "change_provider" | "change_instance" | "change_key" => Stage::Identity,
        // expires + 1 makes the lifetime 31 s.
        "change_expiry" | "clock_at_expiry" | "clock_before_issue_skew" => Stage::Time,
        "append_body_space" | "change_host" | "change_nonce" | "change_signature" => Stage::Mac,
        _ => return None,
    })
}

/// Parse the vectors file and run every vector it lists.
pub fn run(bytes: &[u8]) -> Result<Report, String> {
    let value = crate::canonical::parse_strict(bytes).map_err(|e| e.to_string())?;
    let v: Vectors = serde_json::from_value(value).map_err(|e| e.to_string())?;
    if v.profile != PROFILE {
        return Err(format!(
            "profile: expected {PROFILE:?}, found {:?}",
            v.profile
        ));
    }
    if !v.fixture_only {
        return Err("fixture_only: expected true (vectors carry a published secret)".into());
    }
    let secret: [u8; 32] = crate::signing::decode_base64_strict(&v.secret_base64)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("secret_base64: expected canonical base64 of 32 bytes")?;
    let fx = Fixture { v: &v, secret };
    let mut outcomes = vec![fx.positive()];
    outcomes.extend(v.negative_vectors.iter().map(|n| fx.negative(n)));
    outcomes.extend(v.stateful_vectors.iter().map(|s| fx.stateful(s)));
    Ok(Report { outcomes })
}

struct Fixture<'a> {
    v: &'a Vectors,
    secret: [u8; 32],
}

/// A fresh folder with the vectors' key, and a settable clock.
struct Setup {
    dir: tempfile::TempDir,
    auth: Authenticator,
    now: Arc<AtomicI64>,
}

impl Setup {
    fn verify(&self, req: &HttpRequest) -> Result<(), Rejection> {
        let now = self.now.clone();
        self.auth
            .verify(req, &move || now.load(Ordering::SeqCst))
            .map(|_| ())
    }
    fn set_clock(&self, t: i64) {
        self.now.store(t, Ordering::SeqCst);
    }
}

fn said(r: &Result<(), Rejection>) -> String {
    match r {
        Ok(()) => "accepted".into(),
        Err(e) => format!("rejected ({e})"),
    }
}

impl Fixture<'_> {
    fn setup(&self) -> Result<Setup, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let v = self.v;
        keyring::install(
            dir.path(),
            &v.provider_id,
            &v.instance_id,
            &v.key_id,
            &self.secret,
        )
        .map_err(|e| e.to_string())?;
        let auth = Authenticator::open_with(dir.path(), true).map_err(|e| e.to_string())?;
        Ok(Setup {
            dir,
            auth,
            now: Arc::new(AtomicI64::new(v.issued)),
        })
    }

    /// The vectors' request signed with `secret` under `key_id`.
    fn request(&self, secret: &[u8; 32], key_id: &str, issued: i64, nonce: &str) -> HttpRequest {
        let v = self.v;
        let body = v.body_utf8.as_bytes().to_vec();
        let expires = issued + (v.expires - v.issued);
        let signed = sign_request(
            secret,
            &v.method,
            &v.authority,
            &v.target,
            &v.provider_id,
            &v.instance_id,
            key_id,
            issued,
            expires,
            nonce,
            &body,
        )
        .expect("the vectors' components are signable");
        let mut headers = vec![
            ("Host".to_string(), v.authority.as_bytes().to_vec()),
            ("Content-Type".to_string(), b"application/json".to_vec()),
            (
                "Content-Length".to_string(),
                body.len().to_string().into_bytes(),
            ),
        ];
        headers.extend(
            signed
                .headers
                .into_iter()
                .map(|(n, val)| (n.to_string(), val.into_bytes())),
        );
        HttpRequest {
            method: v.method.clone(),
            target: v.target.clone(),
            headers,
            body,
        }
    }

    fn base(&self) -> HttpRequest {
        self.request(&self.secret, &self.v.key_id, self.v.issued, &self.v.nonce)
    }

    fn outcome(&self, id: &str, group: Group, r: Result<String, String>) -> Outcome {
        let (passed, observed) = match r {
            Ok(o) => (true, o),
            Err(o) => (false, o),
        };
        Outcome {
            id: id.to_string(),
            group,
            passed,
            observed,
        }
    }

    /// The known answer: our signature and body digest are the published
    /// ones, and the request is accepted at `issued`.
    fn positive(&self) -> Outcome {
        let run = || -> Result<String, String> {
            let req = self.base();
            let sig = header(&req, "x-atmem-signature");
            if sig != self.v.signature {
                return Err(format!(
                    "signature {sig} is not the published {}",
                    self.v.signature
                ));
            }
            let digest = sha256_hex(&req.body);
            if digest != self.v.body_sha256 {
                return Err(format!("body digest {digest} is not the published one"));
            }
            let s = self.setup()?;
            let r = s.verify(&req);
            r.as_ref().map_err(|_| said(&r))?;
            Ok("signature and body digest match the published values; accepted".into())
        };
        self.outcome("positive", Group::Positive, run())
    }

    fn negative(&self, n: &Negative) -> Outcome {
        let run = || -> Result<String, String> {
            let want = expected_stage(&n.mutation)
                .ok_or_else(|| format!("unknown mutation {:?}", n.mutation))?;
            let s = self.setup()?;
            let mut req = self.base();
            mutate(&mut req, &n.mutation, self.v, &s);
            let r = s.verify(&req);
            let stored = s.auth.ledger().stored()?;
            match &r {
                Err(e) if e.stage == want && stored == 0 => Ok(said(&r)),
                Err(e) if e.stage == want => {
                    Err(format!("{}, yet {stored} nonce(s) stored", said(&r)))
                }
                _ => Err(format!(
                    "{}; expected a rejection at {}",
                    said(&r),
                    want.as_str()
                )),
            }
        };
        self.outcome(&n.id, Group::Negative, run())
    }

    fn stateful(&self, vector: &Value) -> Outcome {
        let id = vector["id"].as_str().unwrap_or("").to_string();
        let steps: Vec<&str> = vector["expected"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let run = || -> Result<String, String> {
            match (id.as_str(), steps.as_slice()) {
                ("exact-replay", ["accept", "reject"]) => self.replay(false),
                ("restart-replay", ["accept", "restart", "reject"]) => self.replay(true),
                ("concurrent-replay", []) => {
                    let want = vector["expected_accepts"]
                        .as_u64()
                        .ok_or("expected_accepts missing")?;
                    self.concurrent(want as usize)
                }
                (
                    "rotation",
                    ["old_accept_during_overlap", "new_accept", "old_reject_after_expiry"],
                ) => self.rotation(),
                ("revocation", ["old_reject", "new_accept"]) => self.revocation(),
                _ => Err(format!("unknown stateful vector {vector}")),
            }
        };
        self.outcome(&id, Group::Stateful, run())
    }

    fn replay(&self, restart: bool) -> Result<String, String> {
        let s = self.setup()?;
        let req = self.base();
        let first = s.verify(&req);
        first
            .as_ref()
            .map_err(|_| format!("first: {}", said(&first)))?;
        let again = if restart {
            let fresh = Authenticator::open_with(s.dir.path(), true).map_err(|e| e.to_string())?;
            let now = s.now.clone();
            fresh
                .verify(&req, &move || now.load(Ordering::SeqCst))
                .map(|_| ())
        } else {
            s.verify(&req)
        };
        match &again {
            Err(e) if e.stage == Stage::Replay => Ok(format!(
                "accepted; {}{}",
                if restart { "restarted; " } else { "" },
                said(&again)
            )),
            _ => Err(format!("replay {}", said(&again))),
        }
    }

    fn concurrent(&self, want: usize) -> Result<String, String> {
        const ATTEMPTS: usize = 16;
        let s = self.setup()?;
        let req = Arc::new(self.base());
        let gate = Arc::new(Barrier::new(ATTEMPTS));
        let threads: Vec<_> = (0..ATTEMPTS)
            .map(|_| {
                let (auth, req, gate, now) =
                    (s.auth.clone(), req.clone(), gate.clone(), s.now.clone());
                std::thread::spawn(move || {
                    gate.wait();
                    auth.verify(&req, &move || now.load(Ordering::SeqCst))
                        .map(|_| ())
                })
            })
            .collect();
        let results: Vec<Result<(), Rejection>> = threads
            .into_iter()
            .map(|t| t.join().map_err(|_| "a thread panicked".to_string()))
            .collect::<Result<_, _>>()?;
        let accepted = results.iter().filter(|r| r.is_ok()).count();
        let replays = results
            .iter()
            .filter(|r| matches!(r, Err(e) if e.stage == Stage::Replay))
            .count();
        let text = format!(
            "{ATTEMPTS} concurrent attempts: {accepted} accepted, {replays} rejected as replays"
        );
        if accepted == want && accepted + replays == ATTEMPTS {
            Ok(text)
        } else {
            Err(text)
        }
    }

    /// Rotate at `issued` with the default overlap; the new key's secret is
    /// read back from its file, as a host would.
    fn rotated(&self, s: &Setup, overlap: i64) -> Result<(String, [u8; 32]), String> {
        let issued = rotate(s.dir.path(), overlap, self.v.issued).map_err(|e| e.to_string())?;
        let ring = Keyring::load(s.dir.path()).map_err(|e| e.to_string())?;
        let secret = super::read_secret(s.dir.path(), ring.active()).map_err(|e| e.to_string())?;
        Ok((issued.key_id, *secret))
    }

    fn rotation(&self) -> Result<String, String> {
        let s = self.setup()?;
        let (new_id, new_secret) = self.rotated(&s, DEFAULT_OVERLAP_SECS)?;
        let t0 = self.v.issued;
        let old = s.verify(&self.request(&self.secret, &self.v.key_id, t0, &nonce(1)));
        old.as_ref()
            .map_err(|_| format!("old key during the overlap {}", said(&old)))?;
        let new = s.verify(&self.request(&new_secret, &new_id, t0, &nonce(2)));
        new.as_ref()
            .map_err(|_| format!("new key {}", said(&new)))?;
        let later = t0 + DEFAULT_OVERLAP_SECS;
        s.set_clock(later);
        let late = s.verify(&self.request(&self.secret, &self.v.key_id, later, &nonce(3)));
        match &late {
            Err(e) if e.stage == Stage::Identity => Ok(format!(
                "old key accepted during the {DEFAULT_OVERLAP_SECS} s overlap; new key accepted; old key with a fresh nonce after the overlap {}",
                said(&late)
            )),
            _ => Err(format!("old key after the overlap {}", said(&late))),
        }
    }

    fn revocation(&self) -> Result<String, String> {
        let s = self.setup()?;
        let (new_id, new_secret) = self.rotated(&s, super::MAX_OVERLAP_SECS)?;
        revoke(s.dir.path(), &self.v.key_id).map_err(|e| e.to_string())?;
        let t0 = self.v.issued;
        let old = s.verify(&self.request(&self.secret, &self.v.key_id, t0, &nonce(1)));
        if !matches!(&old, Err(e) if e.stage == Stage::Identity) {
            return Err(format!("revoked key {}", said(&old)));
        }
        let new = s.verify(&self.request(&new_secret, &new_id, t0, &nonce(2)));
        new.as_ref()
            .map_err(|_| format!("new key {}", said(&new)))?;
        Ok(format!(
            "revoked key with a fresh nonce {}; new key accepted",
            said(&old)
        ))
    }
}

/// A fresh, distinct 64-hex nonce.
fn nonce(n: u8) -> String {
    format!("{:02x}", 0xa0 + n).repeat(32)
}

fn header(req: &HttpRequest, name: &str) -> String {
    req.values(name)
        .next()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default()
}

fn set(req: &mut HttpRequest, name: &str, value: &str) {
    for (n, v) in req.headers.iter_mut() {
        if n.eq_ignore_ascii_case(name) {
            *v = value.as_bytes().to_vec();
        }
    }
}

/// Apply one named mutation (the clock ones set the setup's clock).
fn mutate(req: &mut HttpRequest, mutation: &str, v: &Vectors, s: &Setup) {
    match mutation {
        "remove_all_auth_headers" => req
            .headers
            .retain(|(n, _)| !n.to_ascii_lowercase().starts_with("x-atmem-")),
        "duplicate_signature" => {
            let sig = header(req, "x-atmem-signature");
            req.headers
                .push(("X-AtMem-Signature".into(), sig.into_bytes()));
        }
        "append_body_space" => {
            // The stated length follows, so only the MAC can notice.
            req.body.push(b' ');
            set(req, "content-length", &req.body.len().to_string());
        }
        "change_method" => req.method = "GET".into(),
        "change_target" => req.target.push_str("?changed=1"),
        "change_host" => set(req, "host", "127.0.0.1:9999"),
        "change_provider" => set(req, "x-atmem-provider", "other"),
        "change_instance" => set(req, "x-atmem-instance", "other"),
        "change_key" => set(req, "x-atmem-key-id", "other"),
        "change_nonce" => set(req, "x-atmem-nonce", &"02".repeat(32)),
        "change_expiry" => set(req, "x-atmem-expires", &(v.expires + 1).to_string()),
        "change_signature" => set(req, "x-atmem-signature", &"00".repeat(32)),
        "clock_at_expiry" => s.set_clock(v.expires),
        "clock_before_issue_skew" => s.set_clock(v.issued - 6),
        _ => {}
    }
}
