//! Why a consumer may or may not see an object, with the cause named: the include
//! pattern that admits it, the exclude pattern (and the role declaring it) that
//! removes it, or the classification against the consumer's ceiling and where that
//! ceiling comes from. Built on [`View::authorize`], never beside it: the verdict is
//! the view's, this module only names its cause. Only ids, pattern texts, role names
//! and levels are ever reported, never content.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::manifest::Manifest;
use crate::model::Classification;
use crate::resolve::authorize::Denial;
use crate::view::View;

/// Where a consumer's classification ceiling comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CeilingOrigin {
    /// `roles.<role>.max_classification`, reached from the consumer's role through
    /// `via` (empty when the role declares it itself).
    Declared { role: String, via: Vec<String> },
    /// No role on the way declares one: the default, `internal`.
    Default { role: String, via: Vec<String> },
    /// Inheritance is broken (a cycle or an undefined parent): the lowest level.
    Broken { role: String },
    /// The consumer holds no role at all.
    NoRole,
}

/// A consumer's ceiling and its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ceiling {
    pub level: Classification,
    pub origin: CeilingOrigin,
}

impl Ceiling {
    /// Where the ceiling comes from, for people.
    pub fn source(&self) -> String {
        let chain = |role: &str, via: &[String]| {
            if via.is_empty() {
                String::new()
            } else {
                format!(" (inherited: {} → {role})", via.join(" → "))
            }
        };
        match &self.origin {
            CeilingOrigin::Declared { role, via } => {
                format!("roles.{role}.max_classification{}", chain(role, via))
            }
            CeilingOrigin::Default { role, via } => format!(
                "the default `internal` (role `{role}` sets no max_classification{})",
                if via.is_empty() {
                    String::new()
                } else {
                    format!(", nor does any role it inherits: {}", via.join(", "))
                }
            ),
            CeilingOrigin::Broken { role } => format!(
                "the lowest level: role `{role}` has broken inheritance (a cycle or an undefined parent)"
            ),
            CeilingOrigin::NoRole => "the lowest level: the consumer holds no role".into(),
        }
    }

    pub fn json(&self) -> Value {
        json!({"level": self.level.as_str(), "source": self.source()})
    }
}

/// The ceiling of a consumer holding `roles`: the lowest of the roles' ceilings
/// (as the scope computes it), with the first role giving it (by name) as its source.
pub fn ceiling(m: &Manifest, roles: &[String]) -> Ceiling {
    let mut sorted: Vec<&String> = roles.iter().collect();
    sorted.sort();
    let lowest = sorted
        .iter()
        .filter_map(|r| m.roles.get(r.as_str()).map(|role| (role.ceiling, *r)))
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    match lowest {
        None => Ceiling {
            level: Classification::Public,
            origin: CeilingOrigin::NoRole,
        },
        Some((level, role)) => Ceiling {
            level,
            origin: origin_of(m, role),
        },
    }
}

/// Follow one role's ceiling to the declaration (or default) that set it, along the
/// parents holding the lowest ceiling, as the role compiler does.
fn origin_of(m: &Manifest, start: &str) -> CeilingOrigin {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    // Roles walked before the current one, starting with `start`.
    let mut via: Vec<String> = Vec::new();
    let mut at = start;
    loop {
        let Some(role) = m.roles.get(at) else {
            return CeilingOrigin::Broken { role: start.into() };
        };
        if !seen.insert(at) {
            return CeilingOrigin::Broken { role: start.into() };
        }
        if role.max_classification.is_some() {
            return CeilingOrigin::Declared {
                role: at.into(),
                via,
            };
        }
        if role.inherits.is_empty() {
            // Nobody on the way declares one; name the roles inherited from.
            let inherited = via
                .iter()
                .skip(1)
                .cloned()
                .chain((at != start).then(|| at.to_string()));
            return CeilingOrigin::Default {
                role: start.into(),
                via: inherited.collect(),
            };
        }
        if role.inherits.iter().any(|p| !m.roles.contains_key(p)) {
            return CeilingOrigin::Broken { role: start.into() };
        }
        via.push(at.to_string());
        // The parent whose ceiling the role took (the lowest; ties by name).
        at = role
            .inherits
            .iter()
            .filter_map(|p| m.roles.get(p).map(|r| (r.ceiling, p.as_str())))
            .min()
            .map(|(_, p)| p)
            .expect("inherits is not empty");
    }
}

/// The cause of one access decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// Visible, in scope through this include pattern.
    Visible { via: String },
    /// `permissions.deny` names the consumer (or one of its roles) through `entry`.
    ExplicitDeny { entry: String },
    /// This exclude pattern, declared by these roles, removes it.
    ScopeExclusion { pattern: String, roles: Vec<String> },
    /// `permissions.read` names neither the consumer nor its roles.
    NoReadGrant { read: Vec<String> },
    /// No include pattern covers it.
    NotInScope,
    /// Its classification is above the consumer's ceiling.
    Classification {
        classification: Classification,
        ceiling: Ceiling,
    },
    /// Governance fields present but invalid.
    InvalidGovernance { fields: Vec<String> },
}

impl Why {
    /// The closed reason code (the bundle's exclusion reasons, plus `visible`).
    pub fn reason(&self) -> &'static str {
        match self {
            Why::Visible { .. } => "visible",
            Why::ExplicitDeny { .. } | Why::NoReadGrant { .. } => "permission-denied",
            Why::ScopeExclusion { .. } => "scope-exclusion",
            Why::NotInScope => "not-in-scope",
            Why::Classification { .. } => "classification-denied",
            Why::InvalidGovernance { .. } => "invalid-governance",
        }
    }

    pub fn is_visible(&self) -> bool {
        matches!(self, Why::Visible { .. })
    }

    /// The cause for people: names patterns, roles and levels, never content.
    pub fn detail(&self) -> String {
        match self {
            Why::Visible { via } => format!("in scope via `{via}`"),
            Why::ExplicitDeny { entry } => format!("`permissions.deny` lists `{entry}`"),
            Why::ScopeExclusion { pattern, roles } => {
                let by: Vec<String> = roles.iter().map(|r| format!("roles.{r}.exclude")).collect();
                format!("excluded by `{pattern}` ({})", by.join(", "))
            }
            Why::NoReadGrant { read } => format!(
                "`permissions.read` grants only {}",
                read.iter()
                    .map(|r| format!("`{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Why::NotInScope => "no include pattern covers it".into(),
            Why::Classification {
                classification,
                ceiling,
            } => format!(
                "classification `{classification}` is above the ceiling `{}`, set by {}",
                ceiling.level,
                ceiling.source()
            ),
            Why::InvalidGovernance { fields } => format!(
                "governance field(s) {} invalid; withheld until `ctx validate` passes",
                fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The cause as data.
    pub fn json(&self) -> Value {
        let mut v = json!({"reason": self.reason(), "detail": self.detail()});
        match self {
            Why::Visible { via } => v["matched"] = json!(via),
            Why::ExplicitDeny { entry } => v["deny_entry"] = json!(entry),
            Why::ScopeExclusion { pattern, roles } => {
                v["pattern"] = json!(pattern);
                v["declared_by"] = json!(roles);
            }
            Why::NoReadGrant { read } => v["read"] = json!(read),
            Why::Classification {
                classification,
                ceiling,
            } => {
                v["classification"] = json!(classification.as_str());
                v["ceiling"] = ceiling.json();
            }
            Why::InvalidGovernance { fields } => v["fields"] = json!(fields),
            Why::NotInScope => {}
        }
        v
    }
}

/// Why `view`'s consumer may or may not see object `i`. The author's view has no
/// scope: everything valid is visible to it.
pub fn why(view: &View<'_>, i: usize) -> Why {
    let o = &view.repo().objects[i];
    let verdict = view.authorize(i);
    let (Some(scope), Some(consumer)) = (view.scope(), view.consumer()) else {
        return match verdict {
            Ok(()) => Why::Visible { via: "*".into() },
            Err(d) => invalid(d),
        };
    };
    let m = &view.repo().manifest;
    let named = |entry: &str| {
        crate::pattern::principal_matches(entry, &consumer.id)
            || scope
                .principals
                .iter()
                .any(|r| crate::pattern::principal_matches(entry, r))
    };
    match verdict {
        Ok(()) => Why::Visible {
            via: scope
                .include
                .iter()
                .find(|p| p.covers(&o.id))
                .map(|p| p.as_str().to_string())
                .unwrap_or_default(),
        },
        Err(Denial::ExplicitDeny) => Why::ExplicitDeny {
            entry: o
                .meta
                .deny
                .iter()
                .find(|e| named(e))
                .cloned()
                .unwrap_or_default(),
        },
        Err(Denial::ScopeExclusion) => {
            let pattern = scope
                .exclude
                .iter()
                .find(|p| p.covers(&o.id))
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let roles = scope
                .principals
                .iter()
                .filter(|r| {
                    m.roles
                        .get(r.as_str())
                        .is_some_and(|role| role.exclude.iter().any(|p| p.as_str() == pattern))
                })
                .cloned()
                .collect();
            Why::ScopeExclusion { pattern, roles }
        }
        Err(Denial::NoReadGrant) => Why::NoReadGrant {
            read: o.meta.read.clone().unwrap_or_default(),
        },
        Err(Denial::NotInScope) => Why::NotInScope,
        Err(Denial::Classification) => Why::Classification {
            classification: o.meta.classification,
            ceiling: ceiling(m, &consumer.roles),
        },
        Err(d @ Denial::InvalidGovernance(_)) => invalid(d),
    }
}

fn invalid(d: Denial) -> Why {
    match d {
        Denial::InvalidGovernance(f) => Why::InvalidGovernance {
            fields: f.fields().map(str::to_string).collect(),
        },
        // Only invalid governance withholds from the author.
        _ => Why::NotInScope,
    }
}
