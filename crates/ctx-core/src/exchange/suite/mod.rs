//! ctx's own Context Layer conformance suite (`conformance/context-layer/`):
//! one case per required test of the seed's §14, each run against a fresh
//! copy of the suite's fixture repository through the real operations.
//! `ctx conformance <dir>` runs it when the index says `contextLayerConformance`.

mod cases;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::conformance::{CaseResult, Verdict};
use crate::error::{Error, Result};
use crate::exchange::canon;
use crate::exchange::ops::bundles::{self, ConsumerOptions, IssueOptions, IssuedBundle};
use crate::exchange::ops::decide::{self, Decided, EvaluateOptions};
use crate::exchange::ops::Exchange;
use crate::exchange::view::ViewOptions;
use crate::load::{self, LoadOptions, Repo};
use crate::manifest::Manifest;
use crate::signing::SigningKeyPair;
use crate::time::Instant;

/// Is `dir` (or the file) a Context Layer suite index?
pub fn is_suite(dir: &Path) -> bool {
    read_index(dir).is_ok_and(|(_, v)| v.get("contextLayerConformance").is_some())
}

fn read_index(dir: &Path) -> std::result::Result<(PathBuf, Value), String> {
    let index = if dir.is_file() {
        dir.to_path_buf()
    } else {
        dir.join("conformance.json")
    };
    let text = std::fs::read_to_string(&index).map_err(|e| format!("{}: {e}", index.display()))?;
    let v = crate::json::parse(&text).map_err(|e| format!("{}: {}", index.display(), e.message))?;
    Ok((index.parent().map(Path::to_path_buf).unwrap_or_default(), v))
}

/// The parsed index.
pub(crate) struct Suite {
    base: PathBuf,
    index: Value,
    clock: Instant,
    keys: BTreeMap<String, SigningKeyPair>,
    pub sentinels: Vec<String>,
}

/// Run every case; each result is named by the case id.
pub fn run(dir: &Path) -> Result<Vec<CaseResult>> {
    let (base, index) = read_index(dir).map_err(Error::Invalid)?;
    let bad = |m: &str| Error::Invalid(format!("{}: {m}", dir.display()));
    let clock = index["clock"]
        .as_str()
        .and_then(canon::parse_time)
        .ok_or_else(|| bad("`clock` must be an RFC 3339 instant"))?;
    let mut keys = BTreeMap::new();
    for (id, hex_seed) in index["keys"].as_object().into_iter().flatten() {
        let seed = hex_seed
            .as_str()
            .and_then(|s| hex::decode(s).ok())
            .filter(|b| b.len() == 32)
            .ok_or_else(|| bad(&format!("keys.{id}: expected 64 hex characters")))?;
        let mut s = [0u8; 32];
        s.copy_from_slice(&seed);
        keys.insert(id.clone(), SigningKeyPair::from_seed(&s));
    }
    let sentinels = index["sentinels"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let suite = Suite {
        base,
        clock,
        keys,
        sentinels,
        index,
    };
    let mut out = Vec::new();
    for case in suite.index["cases"].as_array().into_iter().flatten() {
        let id = case["id"].as_str().unwrap_or("?").to_string();
        let verdict = match Harness::new(&suite) {
            Err(e) => Verdict::Failed(format!("setup: {e}")),
            Ok(h) => match cases::run(&suite, &h, case) {
                Ok(()) => Verdict::Passed,
                Err(e) => Verdict::Failed(e),
            },
        };
        out.push(CaseResult {
            group: "context-layer",
            name: id,
            verdict,
        });
    }
    Ok(out)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

/// A fresh copy of the fixture repository and what the cases need around it.
pub(crate) struct Harness {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub clock: Instant,
    keys: BTreeMap<String, SigningKeyPair>,
    base_request: Value,
}

pub(crate) type Check<T> = std::result::Result<T, String>;

/// `Err(String)` from a protocol error, for `?` in checks.
pub(crate) fn cl<T>(what: &str, r: crate::exchange::ClResult<T>) -> Check<T> {
    r.map_err(|e| format!("{what}: unexpected {}: {}", e.code, e.message))
}

impl Harness {
    fn new(s: &Suite) -> Check<Harness> {
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = tmp.path().join("repo");
        let src = s
            .base
            .join(s.index["repository"].as_str().unwrap_or("repo"));
        copy_dir(&src, &root).map_err(|e| format!("copy {}: {e}", src.display()))?;
        Ok(Harness {
            root: root.canonicalize().map_err(|e| e.to_string())?,
            _tmp: tmp,
            clock: s.clock,
            keys: s.keys.clone(),
            base_request: s.index["base_request"].clone(),
        })
    }

    /// Load the repository as it is on disk now (a fresh process would).
    pub fn load(&self) -> Check<Repo> {
        let (m, diags) =
            Manifest::discover(Some(&self.root), &self.root).map_err(|e| e.to_string())?;
        Ok(load::load(m, diags, &LoadOptions::default()))
    }

    pub fn exchange<'r>(&self, repo: &'r Repo) -> Check<Exchange<'r>> {
        let mut ex = cl("exchange", Exchange::new(repo, ViewOptions::default()))?;
        ex.keys = self.keys.clone();
        Ok(ex)
    }

    /// The base request with a case's shallow patch.
    pub fn request(&self, case: &Value) -> Value {
        let mut r = self.base_request.clone();
        for (k, v) in case["request_patch"].as_object().into_iter().flatten() {
            r[k] = v.clone();
        }
        r
    }

    pub fn at(&self, seconds: i64) -> Instant {
        self.clock + chrono::Duration::seconds(seconds)
    }

    pub fn evaluate(
        &self,
        ex: &Exchange<'_>,
        request: &Value,
    ) -> crate::exchange::ClResult<Decided> {
        decide::evaluate(
            ex,
            &EvaluateOptions {
                request: request.clone(),
                approval: None,
                at: self.clock,
                version: None,
            },
        )
    }

    pub fn issue(
        &self,
        ex: &Exchange<'_>,
        decision: &Value,
    ) -> crate::exchange::ClResult<IssuedBundle> {
        bundles::issue(
            ex,
            &IssueOptions {
                decision: decision.clone(),
                key: None,
                at: self.at(1),
            },
        )
    }

    /// Evaluate and issue a case's request (both must succeed).
    pub fn bundle(&self, ex: &Exchange<'_>, case: &Value) -> Check<IssuedBundle> {
        let d = cl("evaluate", self.evaluate(ex, &self.request(case)))?;
        if !d.evaluation.state.grants() {
            return Err(format!(
                "expected a granting decision, got {}",
                d.evaluation.decision["reason_codes"]
            ));
        }
        cl("issue", self.issue(ex, &d.evaluation.decision))
    }

    pub fn as_consumer(&self, envelope: &Value, recipient: &str, seconds: i64) -> ConsumerOptions {
        ConsumerOptions {
            envelope: serde_json::to_vec(envelope).expect("JSON"),
            recipient: recipient.into(),
            at: self.at(seconds),
            trust: None,
        }
    }
}
