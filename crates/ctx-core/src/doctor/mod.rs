//! `doctor`: validation plus the checks that need a clock, a report per
//! collection, and the health score. [`check`] turns a loaded repository and
//! plain [`DoctorOptions`] into a [`HealthReport`]; [`render`] draws it for
//! people and machines, so every front end shows the same report.

pub mod clock;
pub mod health;
pub mod logs;
pub mod reach;
mod readers;
pub mod render;
pub mod report;

use std::collections::{BTreeMap, HashSet};

use crate::diag::{self, Code, Diagnostic, Severity, Tally};
use crate::load::Repo;
use crate::time::Instant;
use crate::validate::{self, supersession, Index, ValidateOptions};

pub use health::{format_score, HealthConfig, DEFAULT_WEIGHTS};
pub use report::{check, DoctorOptions, Floor, HealthReport};

/// Codes `ctx conflicts` reports.
pub const CONFLICT_CODES: [Code; 7] = [
    Code::DuplicateCanonical,
    Code::DuplicateId,
    Code::ConflictDeclared,
    Code::ConflictAmbiguous,
    Code::BrokenSupersession,
    Code::SupersessionCycle,
    Code::MultipleActiveVersions,
];

/// Codes `ctx stale` reports.
pub const CLOCK_CODES: [Code; 4] = [
    Code::Stale,
    Code::Expired,
    Code::NotYetValid,
    Code::ReviewOverdue,
];

/// The positions of superseded objects (history; clocks do not apply to them).
pub fn superseded(repo: &Repo) -> HashSet<usize> {
    supersession::analyse(&Index::new(&repo.objects)).superseded
}

/// The positions superseded at `now`: a successor counts only from its own
/// `valid_from`, so until then its predecessor's clock still runs.
pub fn superseded_at(repo: &Repo, now: Instant) -> HashSet<usize> {
    let sup = supersession::analyse(&Index::new(&repo.objects));
    sup.superseded
        .iter()
        .copied()
        .filter(|&i| sup.superseded_at(&repo.objects, i, now))
        .collect()
}

/// Only the clock-based findings at `now` (what `ctx stale` reports).
pub fn clock_findings(repo: &Repo, now: Instant) -> Vec<Diagnostic> {
    let sup = superseded_at(repo, now);
    let mut out = clock::findings(
        &repo.objects,
        &sup,
        now,
        repo.manifest.default_ttl,
        repo.manifest.stale_is_error,
    );
    diag::normalize(&mut out);
    out
}

/// Every doctor finding: validation (strict checks when `strict`), the clock,
/// orphaned context, broken sources, and the `health` block's own problems.
pub fn findings(
    repo: &Repo,
    now: Instant,
    strict: bool,
    cfg_diags: &[Diagnostic],
) -> Vec<Diagnostic> {
    let mut out = validate::validate(
        repo,
        ValidateOptions {
            strict,
            at: Some(now),
        },
    );
    let sup = superseded(repo);
    // A scheduled successor is already reported by validation, with its predecessor.
    let scheduled: HashSet<(Option<String>, Option<String>)> = out
        .iter()
        .filter(|d| d.code == Code::NotYetValid)
        .map(|d| (d.file.clone(), d.id.clone()))
        .collect();
    out.extend(
        clock::findings(
            &repo.objects,
            &superseded_at(repo, now),
            now,
            repo.manifest.default_ttl,
            repo.manifest.stale_is_error,
        )
        .into_iter()
        .filter(|d| {
            d.code != Code::NotYetValid || !scheduled.contains(&(d.file.clone(), d.id.clone()))
        }),
    );
    out.extend(reach::orphaned(repo, &sup));
    out.extend(reach::broken_sources(repo, &sup));
    out.extend(cfg_diags.iter().cloned());
    out.extend(logs::findings(&repo.manifest));
    diag::normalize(&mut out);
    out
}

/// Roll-up counts shown by the report (the diagnostic schema's `counts`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub stale: usize,
    pub expired: usize,
    pub not_yet_valid: usize,
    pub review_overdue: usize,
    /// Conflict findings (declared, ambiguous, duplicate canonical).
    pub conflicting: usize,
    pub orphaned: usize,
    pub missing_owner: usize,
    /// `source-unavailable` and `unknown-scheme` findings.
    pub broken_sources: usize,
}

impl Counts {
    pub fn of(diags: &[Diagnostic]) -> Counts {
        let mut c = Counts::default();
        for d in diags {
            match d.code {
                Code::Stale => c.stale += 1,
                Code::Expired => c.expired += 1,
                Code::NotYetValid => c.not_yet_valid += 1,
                Code::ReviewOverdue => c.review_overdue += 1,
                Code::ConflictDeclared | Code::ConflictAmbiguous | Code::DuplicateCanonical => {
                    c.conflicting += 1
                }
                Code::Orphaned => c.orphaned += 1,
                Code::MissingOwner => c.missing_owner += 1,
                Code::SourceUnavailable | Code::UnknownScheme => c.broken_sources += 1,
                _ => {}
            }
        }
        c
    }
}

/// The health of one collection (or one `context:` entry).
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionHealth {
    pub name: String,
    pub objects: usize,
    pub tally: Tally,
    /// Findings per code, most frequent first (ties by code).
    pub codes: Vec<(Code, usize)>,
    pub score: f64,
}

impl CollectionHealth {
    /// The worst severity among its findings.
    pub fn worst(&self) -> Option<Severity> {
        if self.tally.errors > 0 {
            Some(Severity::Error)
        } else if self.tally.warnings > 0 {
            Some(Severity::Warning)
        } else if self.tally.info > 0 {
            Some(Severity::Info)
        } else {
            None
        }
    }
}

/// Group findings by the collection of the object (file) they concern. Findings
/// about the manifest or about no object land in the `(manifest)` group.
pub fn by_collection(
    repo: &Repo,
    diags: &[Diagnostic],
    cfg: &HealthConfig,
) -> Vec<CollectionHealth> {
    const MANIFEST: &str = "(manifest)";
    // Borrowed names and a fast hash: one entry per object of a large repository.
    let mut objects: BTreeMap<&str, usize> = BTreeMap::new();
    let mut of_file: foldhash::HashMap<&str, &str> = foldhash::HashMap::default();
    for c in &repo.manifest.collections {
        objects.entry(&c.name).or_default();
    }
    for e in &repo.manifest.entries {
        objects.entry(&e.key).or_default();
    }
    of_file.reserve(repo.objects.len());
    for o in &repo.objects {
        let name = o.origin.collection.as_deref().unwrap_or(MANIFEST);
        *objects.entry(name).or_default() += 1;
        of_file.insert(o.origin.file.as_str(), name);
    }
    let mut grouped: BTreeMap<&str, Vec<Diagnostic>> = BTreeMap::new();
    for d in diags {
        let name = d
            .file
            .as_deref()
            .and_then(|f| of_file.get(f).copied())
            .unwrap_or(MANIFEST);
        grouped.entry(name).or_default().push(d.clone());
    }
    if grouped.contains_key(MANIFEST) {
        objects.entry(MANIFEST).or_default();
    }
    objects
        .into_iter()
        .map(|(name, n)| {
            let ds = grouped.remove(name).unwrap_or_default();
            let mut per: BTreeMap<Code, usize> = BTreeMap::new();
            for d in &ds {
                *per.entry(d.code).or_default() += 1;
            }
            let mut codes: Vec<(Code, usize)> = per.into_iter().collect();
            codes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            CollectionHealth {
                score: cfg.score(&ds, n),
                tally: Tally::of(&ds),
                codes,
                objects: n,
                name: name.to_string(),
            }
        })
        .collect()
}

/// Why a doctor run fails, if it does.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The score is below the floor (`--min-score`, else `health.minimum_score`).
    BelowMinimum { score: f64, minimum: f64 },
    /// `--strict` and some finding is at or above `health.fail_on`.
    AtFailOn { severity: Severity, count: usize },
}

/// Apply the gates. The floor always applies; `fail_on` applies under `--strict`.
pub fn gate(
    diags: &[Diagnostic],
    score: f64,
    cfg: &HealthConfig,
    min_score: Option<f64>,
    strict: bool,
) -> Vec<Failure> {
    let mut out = Vec::new();
    if let Some(minimum) = min_score.or(cfg.minimum_score) {
        if score < minimum {
            out.push(Failure::BelowMinimum { score, minimum });
        }
    }
    if strict {
        let count = diags.iter().filter(|d| d.severity >= cfg.fail_on).count();
        if count > 0 {
            out.push(Failure::AtFailOn {
                severity: cfg.fail_on,
                count,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_always_applies_fail_on_only_when_strict() {
        let cfg = HealthConfig {
            minimum_score: Some(90.0),
            ..HealthConfig::default()
        };
        let errs = vec![Diagnostic::error(Code::Expired, "x")];
        assert!(gate(&errs, 95.0, &cfg, None, false).is_empty());
        assert_eq!(
            gate(&errs, 95.0, &cfg, None, true),
            vec![Failure::AtFailOn {
                severity: Severity::Error,
                count: 1
            }]
        );
        assert_eq!(
            gate(&[], 89.9, &cfg, None, false),
            vec![Failure::BelowMinimum {
                score: 89.9,
                minimum: 90.0
            }]
        );
        // The flag overrides the manifest floor.
        assert!(gate(&[], 89.9, &cfg, Some(80.0), false).is_empty());
        let warn_cfg = HealthConfig {
            fail_on: Severity::Warning,
            ..HealthConfig::default()
        };
        let warns = vec![Diagnostic::warning(Code::Stale, "x")];
        assert_eq!(gate(&warns, 99.0, &warn_cfg, None, true).len(), 1);
        assert!(gate(&warns, 99.0, &HealthConfig::default(), None, true).is_empty());
    }

    #[test]
    fn findings_are_listed_most_severe_first() {
        let mut d = vec![
            Diagnostic::info(Code::Orphaned, "a").id("a").file("a.md"),
            Diagnostic::error(Code::Expired, "b").id("b").file("b.md"),
            Diagnostic::warning(Code::Stale, "c").id("c").file("a.md"),
            Diagnostic::error(Code::DuplicateId, "d")
                .id("d")
                .file("a.md"),
        ];
        diag::normalize(&mut d);
        let codes: Vec<Code> = d.iter().map(|d| d.code).collect();
        assert_eq!(
            codes,
            vec![
                Code::DuplicateId,
                Code::Expired,
                Code::Stale,
                Code::Orphaned
            ]
        );
    }
}
