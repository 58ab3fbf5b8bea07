//! The doctor health report: one operation ([`check`]) from plain options to a
//! typed [`HealthReport`] that every front end renders (see [`super::render`]).

use std::path::PathBuf;

use crate::diag::{Diagnostic, Severity};
use crate::load::Repo;
use crate::time::Instant;

use super::{by_collection, findings, gate, CollectionHealth, Counts, Failure, HealthConfig};

/// What a doctor run is asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoctorOptions {
    /// The instant the clock findings are judged at.
    pub at: Instant,
    /// Run validate's strict checks, and fail on findings at or above `health.fail_on`.
    pub strict: bool,
    /// The score floor (`--min-score`); overrides `health.minimum_score`.
    pub min_score: Option<f64>,
}

/// Where the score floor came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Floor {
    /// `--min-score`.
    Flag(f64),
    /// `health.minimum_score` in the manifest.
    Manifest(f64),
}

impl Floor {
    pub fn value(self) -> f64 {
        match self {
            Floor::Flag(v) | Floor::Manifest(v) => v,
        }
    }
}

/// The outcome of a doctor run.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthReport {
    /// The manifest folder (file paths in findings are relative to it).
    pub root: PathBuf,
    /// The manifest `id`; empty when the manifest could not be loaded.
    pub namespace: String,
    pub objects: usize,
    pub at: Instant,
    pub strict: bool,
    /// Every finding, most severe first (the order of [`crate::diag::normalize`]).
    pub findings: Vec<Diagnostic>,
    pub counts: Counts,
    pub score: f64,
    pub collections: Vec<CollectionHealth>,
    pub config: HealthConfig,
    pub floor: Option<Floor>,
    /// The gates that failed.
    pub failures: Vec<Failure>,
    /// False when the manifest could not be loaded: `findings` holds that one error.
    pub loaded: bool,
}

impl HealthReport {
    /// Did the run pass its gates (the exit status)? Without `--strict`, error
    /// findings alone do not fail it; a manifest that cannot be loaded always does.
    pub fn passed(&self) -> bool {
        self.loaded && self.failures.is_empty()
    }

    /// The diagnostic document's `ok`: false when a gate failed or any finding is
    /// an error, with or without `--strict`.
    pub fn ok(&self) -> bool {
        self.passed() && !self.findings.iter().any(|d| d.severity == Severity::Error)
    }

    /// The report for a manifest that could not be loaded: its one finding, no
    /// objects, a score of 0, and a failure whatever the flags say.
    pub fn unloadable(root: PathBuf, finding: Diagnostic, opts: &DoctorOptions) -> HealthReport {
        let findings = vec![finding];
        HealthReport {
            root,
            namespace: String::new(),
            objects: 0,
            at: opts.at,
            strict: opts.strict,
            counts: Counts::of(&findings),
            findings,
            score: 0.0,
            collections: Vec::new(),
            config: HealthConfig::default(),
            floor: opts.min_score.map(Floor::Flag),
            failures: Vec::new(),
            loaded: false,
        }
    }
}

/// Check a loaded repository: validation (strict checks when asked), the clock,
/// orphaned context, broken sources, the score per collection and overall, and
/// the gates.
pub fn check(repo: &Repo, opts: &DoctorOptions) -> HealthReport {
    let (config, config_findings) = HealthConfig::from_manifest(&repo.manifest);
    let findings = findings(repo, opts.at, opts.strict, &config_findings);
    let objects = repo.objects.len();
    let score = config.score(&findings, objects);
    let collections = by_collection(repo, &findings, &config);
    let failures = gate(&findings, score, &config, opts.min_score, opts.strict);
    let floor = match (opts.min_score, config.minimum_score) {
        (Some(m), _) => Some(Floor::Flag(m)),
        (None, Some(m)) => Some(Floor::Manifest(m)),
        (None, None) => None,
    };
    HealthReport {
        root: repo.manifest.root.clone(),
        namespace: repo.manifest.id.clone(),
        objects,
        at: opts.at,
        strict: opts.strict,
        counts: Counts::of(&findings),
        findings,
        score,
        collections,
        config,
        floor,
        failures,
        loaded: true,
    }
}
