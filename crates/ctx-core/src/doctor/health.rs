//! The health score and its configuration (the manifest's `health` block).
//!
//! ```text
//! deduction = Σ (weight[code] × occurrences) / max(objects, 1)
//! score     = clamp(100 − deduction × 100, 0, 100), rounded down to one decimal
//! ```
//!
//! Rounding down keeps a repository with any finding from ever printing 100.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diag::{Code, Diagnostic, Severity};
use crate::manifest::Manifest;

/// Default weights: how much of the repository's health one occurrence costs.
/// Anything that makes the resolver answer *wrongly* costs more than anything
/// that makes it answer *incompletely*.
pub const DEFAULT_WEIGHTS: [(Code, f64); 30] = [
    (Code::SchemaInvalid, 1.0),
    (Code::ManifestInvalid, 1.0),
    (Code::DuplicateId, 1.0),
    (Code::DuplicateCanonical, 1.0),
    (Code::ConflictAmbiguous, 1.0),
    (Code::SecretDetected, 1.0),
    (Code::PathTraversal, 1.0),
    (Code::BrokenSupersession, 0.8),
    (Code::SupersessionCycle, 0.8),
    (Code::UntrustedCanonical, 0.8),
    (Code::RoleCycle, 0.8),
    (Code::UnknownScheme, 0.6),
    (Code::SourceUnavailable, 0.6),
    (Code::BrokenReference, 0.5),
    (Code::UnknownRole, 0.5),
    (Code::UnknownAuthority, 0.5),
    (Code::MultipleActiveVersions, 0.4),
    (Code::Expired, 0.4),
    (Code::ConflictDeclared, 0.3),
    (Code::MissingProvenance, 0.3),
    (Code::InvalidPermission, 0.3),
    (Code::MissingDigest, 0.2),
    (Code::MissingOwner, 0.2),
    (Code::Stale, 0.15),
    (Code::ReviewOverdue, 0.15),
    (Code::Orphaned, 0.1),
    (Code::Unapproved, 0.1),
    (Code::EmptyScope, 0.1),
    (Code::UnknownExtension, 0.1),
    (Code::NotYetValid, 0.05),
    // About the repository's logs, not its context: reported and gated, not scored.
];

/// The effective `health` configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthConfig {
    pub weights: BTreeMap<Code, f64>,
    /// `health.minimum_score`: the floor `doctor` enforces.
    pub minimum_score: Option<f64>,
    /// `health.fail_on`: the lowest severity that fails `doctor --strict` (default `error`).
    pub fail_on: Severity,
    pub require_owner: bool,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            weights: DEFAULT_WEIGHTS.iter().copied().collect(),
            minimum_score: None,
            fail_on: Severity::Error,
            require_owner: false,
        }
    }
}

impl HealthConfig {
    /// Read `health` from the manifest. Values the schema rejects are reported by
    /// `validate`; here they fall back to defaults, and weights naming no
    /// diagnostic code are returned as findings (a typo would silently do nothing).
    pub fn from_manifest(m: &Manifest) -> (HealthConfig, Vec<Diagnostic>) {
        let mut cfg = HealthConfig::default();
        let mut diags = Vec::new();
        let Some(h) = m.raw.get("health").and_then(Value::as_object) else {
            return (cfg, diags);
        };
        cfg.minimum_score = h
            .get("minimum_score")
            .and_then(Value::as_f64)
            .filter(|s| (0.0..=100.0).contains(s));
        if let Some(sev) = h
            .get("fail_on")
            .and_then(Value::as_str)
            .and_then(Severity::parse)
        {
            cfg.fail_on = sev;
        }
        cfg.require_owner = h
            .get("require_owner")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let Some(w) = h.get("weights").and_then(Value::as_object) {
            for (key, v) in w {
                let weight = v.as_f64().filter(|x| x.is_finite() && *x >= 0.0);
                match (Code::parse(key), weight) {
                    (Some(code), Some(x)) => {
                        cfg.weights.insert(code, x);
                    }
                    (None, _) => {
                        let names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
                        let mut d = Diagnostic::warning(
                            Code::ManifestInvalid,
                            format!("`health.weights` names `{key}`, which is no diagnostic code"),
                        )
                        .file(m.file.clone())
                        .field(format!("health.weights.{key}"))
                        .expected(serde_json::json!(names))
                        .actual(key.as_str())
                        .fix("use one of the diagnostic codes (see `ctx doctor --help`)");
                        let path = [
                            crate::schema::PathItem::Key("health".into()),
                            crate::schema::PathItem::Key("weights".into()),
                            crate::schema::PathItem::Key(key.clone()),
                        ];
                        if let Some((l, c)) = m.locate(&path) {
                            d = d.at(l, c);
                        }
                        diags.push(d);
                    }
                    // A negative or non-numeric weight is a schema error `validate` reports.
                    (Some(_), None) => {}
                }
            }
        }
        (cfg, diags)
    }

    pub fn weight(&self, code: Code) -> f64 {
        self.weights.get(&code).copied().unwrap_or(0.0)
    }

    /// The score of `diags` over `objects` objects (see the module docs).
    pub fn score(&self, diags: &[Diagnostic], objects: usize) -> f64 {
        // Findings about ctx's own evidence files (the logs under `.ctx/`) are
        // reported, not scored: they are about the record, not the context.
        let total: f64 = diags
            .iter()
            .filter(|d| !d.file.as_deref().is_some_and(|f| f.starts_with(".ctx/")))
            .map(|d| self.weight(d.code))
            .sum();
        let deduction = total / objects.max(1) as f64;
        let s = (100.0 - deduction * 100.0).clamp(0.0, 100.0);
        // Round down; the epsilon absorbs binary noise such as 91.49999999.
        ((s * 10.0) + 1e-9).floor() / 10.0
    }
}

/// Format a score without a needless `.0` (`100`, `91.5`).
pub fn format_score(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(code: Code) -> Diagnostic {
        Diagnostic::warning(code, "x")
    }

    #[test]
    fn every_code_has_a_default_weight() {
        let cfg = HealthConfig::default();
        for c in Code::ALL {
            assert!(cfg.weights.contains_key(c), "{c} has no weight");
        }
    }

    #[test]
    fn score_follows_the_documented_formula() {
        let cfg = HealthConfig::default();
        assert_eq!(cfg.score(&[], 0), 100.0);
        assert_eq!(cfg.score(&[], 10), 100.0);
        // One stale object in ten: 100 − 0.15/10 × 100 = 98.5.
        assert_eq!(cfg.score(&[d(Code::Stale)], 10), 98.5);
        // 1.0 + 0.4 over 4 objects: 100 − 35 = 65.
        assert_eq!(
            cfg.score(&[d(Code::DuplicateCanonical), d(Code::Expired)], 4),
            65.0
        );
        // Clamped at 0.
        assert_eq!(cfg.score(&vec![d(Code::SchemaInvalid); 5], 1), 0.0);
        // Rounded down: 100 − 0.05/3 × 100 = 98.333… → 98.3.
        assert_eq!(cfg.score(&[d(Code::NotYetValid)], 3), 98.3);
        // Any deduction keeps the score below 100.
        assert!(cfg.score(&[d(Code::NotYetValid)], 100_000) < 100.0);
    }

    #[test]
    fn formatting() {
        assert_eq!(format_score(100.0), "100");
        assert_eq!(format_score(91.5), "91.5");
    }
}
