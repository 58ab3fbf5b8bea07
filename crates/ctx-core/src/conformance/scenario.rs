//! Resolution scenarios (`resolution/<name>/` with `opencontext.yaml`, `context/`
//! and `expected.json`): resolve and validate the folder, compare with the
//! expectations, and check that a repeated run yields the same digest.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};

use super::Verdict;
use crate::adapters::AdapterOptions;
use crate::bundle;
use crate::load::{self, LoadOptions, Repo};
use crate::manifest::Manifest;
use crate::resolve::{self, Consumer, Request};
use crate::validate::{self, ValidateOptions};

/// Why a scenario did not pass: the setup failed, or what ctx produced
/// differs from the expectation; `In` names the step that failed.
#[derive(Debug, thiserror::Error)]
enum ScenarioError {
    /// The expectation file cannot be read or parsed.
    #[error("{}: {why}", path.display())]
    Expected {
        path: std::path::PathBuf,
        why: String,
    },
    /// The repository or the request cannot be built.
    #[error("{0}")]
    Setup(String),
    /// What ctx produced differs from the expectation.
    #[error("{0}")]
    Mismatch(String),
    #[error("{step}: {source}")]
    In {
        step: String,
        source: Box<ScenarioError>,
    },
}

impl ScenarioError {
    fn setup(e: impl std::fmt::Display) -> Self {
        ScenarioError::Setup(e.to_string())
    }

    fn within(step: impl Into<String>) -> impl FnOnce(ScenarioError) -> ScenarioError {
        let step = step.into();
        move |e| ScenarioError::In {
            step,
            source: Box::new(e),
        }
    }
}

fn load_repo(dir: &Path) -> Result<Repo, ScenarioError> {
    let (m, diags) = Manifest::discover(Some(dir), dir).map_err(ScenarioError::setup)?;
    Ok(load::load(m, diags, &LoadOptions::default()))
}

/// Run one scenario folder against its expectations.
pub fn run(dir: &Path, expected: &Path) -> Verdict {
    match run_inner(dir, expected) {
        Ok(()) => Verdict::Passed,
        Err(e) => Verdict::Failed(e.to_string()),
    }
}

fn run_inner(dir: &Path, expected: &Path) -> Result<(), ScenarioError> {
    let unreadable = |why: String| ScenarioError::Expected {
        path: expected.to_path_buf(),
        why,
    };
    let text = std::fs::read_to_string(expected).map_err(|e| unreadable(e.to_string()))?;
    let spec: Value = crate::json::parse(&text).map_err(|e| unreadable(e.message))?;
    let repo = load_repo(dir)?;
    if let (Some(r), Some(e)) = (spec.get("resolve"), spec.get("expect")) {
        check_resolution(&repo, r, e).map_err(ScenarioError::within("resolve"))?;
    }
    for (n, also) in spec
        .get("also")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let (Some(r), Some(e)) = (also.get("resolve"), also.get("expect")) {
            check_resolution(&repo, r, e).map_err(ScenarioError::within(format!("also[{n}]")))?;
        }
    }
    if let Some(v) = spec.get("validate") {
        check_validation(&repo, v).map_err(ScenarioError::within("validate"))?;
    }
    Ok(())
}

fn request(repo: &Repo, r: &Value) -> Result<Request, ScenarioError> {
    let roles: Vec<String> = match r.get("role") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => r
            .get("roles")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    };
    let consumer = Consumer::from_flags(
        &repo.manifest,
        r.get("agent").and_then(Value::as_str),
        &roles,
    )
    .map_err(ScenarioError::setup)?;
    let at = match r.get("at").and_then(Value::as_str) {
        Some(s) => crate::time::parse_at(s)
            .ok_or_else(|| ScenarioError::Setup(format!("bad `at`: {s}")))?,
        None => chrono::Utc::now(),
    };
    let include = r
        .get("include")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter_map(|p| crate::pattern::Pattern::parse(p).ok())
                .collect()
        })
        .unwrap_or_default();
    Ok(Request {
        consumer,
        task: r.get("task").and_then(Value::as_str).map(str::to_string),
        at,
        include_historical: r
            .get("includeHistorical")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        limit: r.get("limit").and_then(Value::as_u64).map(|n| n as usize),
        min_relevance: r.get("minRelevance").and_then(Value::as_f64),
        include,
        max_tokens: None,
        adapters: AdapterOptions {
            offline: true,
            ..AdapterOptions::default()
        },
        identities: None,
        withhold: Default::default(),
    })
}

/// Walk a dotted path with numeric indexes (`contacts.0.email`).
fn at_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, seg| match cur {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn objects_by_id<'a>(bundle: &'a Value, id: &str) -> Vec<&'a Value> {
    bundle["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["id"] == id)
        .collect()
}

fn check_resolution(repo: &Repo, r: &Value, e: &Value) -> Result<(), ScenarioError> {
    let req = request(repo, r)?;
    let mut res1 = resolve::resolve(repo, req.clone()).map_err(ScenarioError::setup)?;
    let b = bundle::compile(repo, &mut res1, "2000-01-01T00:00:00Z");
    let mut res2 = resolve::resolve(repo, req).map_err(ScenarioError::setup)?;
    let b2 = bundle::compile(repo, &mut res2, "2001-01-01T00:00:00Z");
    if b["digest"] != b2["digest"] {
        return Err(ScenarioError::Mismatch(
            "a repeated run produced a different digest".into(),
        ));
    }
    let violations = crate::schema::check(crate::schema::Kind::Bundle, &b);
    if let Some(v) = violations.first() {
        return Err(ScenarioError::Mismatch(format!(
            "bundle does not validate against the bundle schema: {} {}",
            v.field, v.message
        )));
    }
    let included: BTreeSet<&str> = b["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["id"].as_str())
        .collect();
    if let Some(want) = e.get("included").and_then(Value::as_array) {
        let want: BTreeSet<&str> = want.iter().filter_map(Value::as_str).collect();
        if want != included {
            return Err(ScenarioError::Mismatch(format!(
                "included {included:?}, expected {want:?}"
            )));
        }
    }
    if let Some(n) = e.get("objectCount").and_then(Value::as_u64) {
        let got = b["objects"].as_array().map_or(0, Vec::len) as u64;
        if got != n {
            return Err(ScenarioError::Mismatch(format!(
                "{got} objects, expected {n}"
            )));
        }
    }
    for (id, v) in e
        .get("includedVersions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if !objects_by_id(&b, id).iter().any(|o| &o["version"] == v) {
            return Err(ScenarioError::Mismatch(format!(
                "`{id}` not included at version {v}"
            )));
        }
    }
    for x in e
        .get("excluded")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let found = b["excluded"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|got| got["id"] == x["id"] && got["reason"] == x["reason"]);
        if !found {
            return Err(ScenarioError::Mismatch(format!(
                "missing exclusion {x}; got {}",
                b["excluded"]
            )));
        }
    }
    for code in e
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !b["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|w| &w["code"] == code)
        {
            return Err(ScenarioError::Mismatch(format!(
                "missing warning {code}; got {}",
                b["warnings"]
            )));
        }
    }
    for (id, state) in e
        .get("lifecycle")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if !objects_by_id(&b, id)
            .iter()
            .any(|o| &o["lifecycle"] == state)
        {
            return Err(ScenarioError::Mismatch(format!(
                "`{id}` lifecycle is not {state}"
            )));
        }
    }
    for (id, paths) in e
        .get("redacted")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let want: BTreeSet<&str> = paths
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let ok = objects_by_id(&b, id).iter().any(|o| {
            let got: BTreeSet<&str> = o["redacted"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            got == want
        });
        if !ok {
            return Err(ScenarioError::Mismatch(format!(
                "`{id}` redacted paths differ from {want:?}"
            )));
        }
    }
    for (id, paths) in e
        .get("contentAbsent")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        for o in objects_by_id(&b, id) {
            for p in paths
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if at_path(&o["content"], p).is_some() {
                    return Err(ScenarioError::Mismatch(format!(
                        "`{id}` content still has `{p}`"
                    )));
                }
            }
        }
    }
    for (id, pairs) in e
        .get("contentEquals")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let objs = objects_by_id(&b, id);
        for (p, want) in pairs.as_object().unwrap_or(&Map::new()) {
            if !objs.iter().any(|o| at_path(&o["content"], p) == Some(want)) {
                return Err(ScenarioError::Mismatch(format!(
                    "`{id}` content `{p}` is not {want}"
                )));
            }
        }
    }
    Ok(())
}

fn check_validation(repo: &Repo, v: &Value) -> Result<(), ScenarioError> {
    let expect_failure = v.get("expectFailure").and_then(Value::as_bool);
    let strict = expect_failure == Some(true);
    let diags = validate::validate(repo, ValidateOptions { strict, at: None });
    let codes: BTreeSet<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    for code in v
        .get("expectDiagnostics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !codes.contains(code) {
            return Err(ScenarioError::Mismatch(format!(
                "missing diagnostic `{code}`; got {codes:?}"
            )));
        }
    }
    if let Some(want) = expect_failure {
        let failed = validate::failed(&diags, strict);
        if failed != want {
            return Err(ScenarioError::Mismatch(format!(
                "validation {} but expected {}",
                if failed { "failed" } else { "passed" },
                if want { "failure" } else { "success" }
            )));
        }
    }
    Ok(())
}
