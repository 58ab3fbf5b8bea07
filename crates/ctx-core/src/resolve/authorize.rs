//! Stage 1 — authorization. Runs before anything looks at content or relevance.
//! Order (first failure wins): explicit deny, scope exclusion, object read grant,
//! scope inclusion, classification ceiling. An object whose governance fields are
//! present but invalid is judged on its id alone, and withheld when in scope.

use crate::manifest::roles::Scope;
use crate::object::{ContextObject, Faults};
use crate::pattern::principal_matches;

/// Why an object is not visible to the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// `permissions.deny` names the consumer or one of its roles.
    ExplicitDeny,
    /// A role `exclude` pattern matches.
    ScopeExclusion,
    /// `permissions.read` exists and names neither the consumer nor its roles.
    NoReadGrant,
    /// No `include` pattern matches: the consumer is not told the object exists.
    NotInScope,
    /// Above the consumer's classification ceiling.
    Classification,
    /// Governance fields present but invalid: ctx cannot tell who may see it.
    InvalidGovernance(Faults),
}

impl Denial {
    /// The bundle exclusion reason (closed set of the bundle schema).
    pub fn reason(self) -> &'static str {
        match self {
            Denial::ExplicitDeny | Denial::NoReadGrant => "permission-denied",
            Denial::ScopeExclusion => "scope-exclusion",
            Denial::NotInScope => "not-in-scope",
            Denial::Classification => "classification-denied",
            Denial::InvalidGovernance(_) => "permission-denied",
        }
    }

    /// What an exclusion record says besides the reason: field names, never values.
    pub fn detail(self) -> Option<String> {
        match self {
            Denial::InvalidGovernance(f) => {
                let names: Vec<String> = f.fields().map(|n| format!("`{n}`")).collect();
                Some(format!(
                    "governance field{} {} {} invalid; withheld until `ctx validate` passes",
                    if names.len() == 1 { "" } else { "s" },
                    names.join(", "),
                    if names.len() == 1 { "is" } else { "are" }
                ))
            }
            _ => None,
        }
    }
}

/// The names a consumer answers to in object permission lists.
pub struct Principals<'a> {
    pub consumer: &'a str,
    pub scope: &'a Scope,
}

impl Principals<'_> {
    fn named_by(&self, list: &[String]) -> bool {
        list.iter().any(|entry| {
            principal_matches(entry, self.consumer)
                || self
                    .scope
                    .principals
                    .iter()
                    .any(|r| principal_matches(entry, r))
        })
    }
}

/// Decide one object. Pure: looks only at governance metadata, never at content.
pub fn authorize(o: &ContextObject, who: &Principals<'_>) -> Result<(), Denial> {
    let scope = who.scope;
    let faults = o.meta.faults;
    if !faults.is_empty() {
        // Nothing but a valid id can be trusted: an object without one is in no scope.
        if faults.contains("id") || !scope.include.iter().any(|p| p.covers(&o.id)) {
            return Err(Denial::NotInScope);
        }
        if scope.exclude.iter().any(|p| p.covers(&o.id)) {
            return Err(Denial::ScopeExclusion);
        }
        return Err(Denial::InvalidGovernance(faults));
    }
    if who.named_by(&o.meta.deny) {
        return Err(Denial::ExplicitDeny);
    }
    if scope.exclude.iter().any(|p| p.covers(&o.id)) {
        return Err(Denial::ScopeExclusion);
    }
    if let Some(read) = &o.meta.read {
        if !who.named_by(read) {
            return Err(Denial::NoReadGrant);
        }
    }
    if !scope.include.iter().any(|p| p.covers(&o.id)) {
        return Err(Denial::NotInScope);
    }
    if o.meta.classification > scope.ceiling {
        return Err(Denial::Classification);
    }
    Ok(())
}
