//! A conformance runner for suites laid out like the official OpenContext one:
//! `conformance.json` with `valid` / `invalid` schema cases and `resolution` scenarios.

pub mod scenario;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::schema::{self, Kind};

#[derive(Debug, Deserialize)]
struct Suite {
    #[serde(default)]
    valid: Vec<Case>,
    #[serde(default)]
    invalid: Vec<Case>,
    #[serde(default)]
    resolution: Vec<ScenarioRef>,
}

#[derive(Debug, Deserialize)]
struct Case {
    fixture: String,
    kind: String,
    #[serde(default)]
    why: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ScenarioRef {
    scenario: String,
    expected: String,
}

/// The verdict on one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed(String),
    NotRun(String),
}

#[derive(Debug, Clone)]
pub struct CaseResult {
    pub group: &'static str,
    pub name: String,
    pub verdict: Verdict,
}

/// Run a suite folder (holding `conformance.json`).
pub fn run(dir: &Path) -> Result<Vec<CaseResult>> {
    let index: PathBuf = if dir.is_file() {
        dir.to_path_buf()
    } else {
        dir.join("conformance.json")
    };
    let base = index.parent().map(Path::to_path_buf).unwrap_or_default();
    if !index.is_file() {
        // A mistyped suite path is "not found" (exit 3), not an invalid suite.
        return Err(Error::NotFound(format!(
            "{}: no conformance suite here (expected a folder holding conformance.json, or the file itself)",
            index.display()
        )));
    }
    let text = std::fs::read_to_string(&index).map_err(|e| Error::io(&index, &e))?;
    let suite: Suite = crate::json::parse(&text)
        .map_err(|e| format!("{}:{}: {}", e.line, e.column, e.message))
        .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
        .map_err(|e| {
            Error::Invalid(format!("{}: not a conformance index: {e}", index.display()))
        })?;
    let mut out = Vec::new();
    for (group, cases, expect_valid) in [
        ("valid", &suite.valid, true),
        ("invalid", &suite.invalid, false),
    ] {
        for c in cases {
            out.push(CaseResult {
                group,
                name: c.fixture.clone(),
                verdict: schema_case(&base, c, expect_valid),
            });
        }
    }
    for s in &suite.resolution {
        let verdict = scenario::run(&base.join(&s.scenario), &base.join(&s.expected));
        out.push(CaseResult {
            group: "resolution",
            name: s.scenario.clone(),
            verdict,
        });
    }
    Ok(out)
}

fn schema_case(base: &Path, c: &Case, expect_valid: bool) -> Verdict {
    let Some(kind) = Kind::parse(&c.kind) else {
        return Verdict::Failed(format!("unknown kind `{}`", c.kind));
    };
    let path = base.join(&c.fixture);
    let doc: Value = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| crate::json::parse(&t).map_err(|e| e.message))
    {
        Ok(v) => v,
        Err(e) => return Verdict::Failed(format!("cannot read fixture: {e}")),
    };
    let violations = schema::check(kind, &doc);
    match (expect_valid, violations.is_empty()) {
        (true, true) | (false, false) => Verdict::Passed,
        (true, false) => Verdict::Failed(format!(
            "expected valid, got: {}",
            violations
                .iter()
                .map(|v| format!("{} {}", v.field, v.message))
                .collect::<Vec<_>>()
                .join("; ")
        )),
        (false, true) => Verdict::Failed(format!(
            "expected invalid ({}), but the document validates",
            c.why.as_deref().unwrap_or("no reason given")
        )),
    }
}
