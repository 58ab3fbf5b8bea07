//! The role graph: validation (unknown roles, cycles, bad patterns) and the
//! effective scope of a consumer after inheritance.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::{Code, Diagnostic};
use crate::model::{Classification, Redaction};
use crate::pattern::Pattern;
use crate::schema::PathItem;

use super::Manifest;

fn located(m: &Manifest, mut d: Diagnostic, path: &[&str]) -> Diagnostic {
    let items: Vec<PathItem> = path.iter().map(|s| PathItem::Key(s.to_string())).collect();
    d = d.file(m.file.clone());
    if let Some((l, c)) = m.locate(&items) {
        d = d.at(l, c);
    }
    d
}

/// Role-graph findings: unknown inherited roles, inheritance cycles, agents naming
/// unknown roles, invalid scope patterns, roles without `include`.
pub fn check(m: &Manifest) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let known: Vec<&str> = m.roles.keys().map(String::as_str).collect();
    for (name, role) in &m.roles {
        for parent in &role.inherits {
            if !m.roles.contains_key(parent) {
                out.push(located(
                    m,
                    Diagnostic::error(
                        Code::UnknownRole,
                        format!("role `{name}` inherits `{parent}`, which is not defined"),
                    )
                    .field(format!("roles.{name}.inherits"))
                    .expected(serde_json::json!(known))
                    .actual(parent.as_str())
                    .fix(format!(
                        "define role `{parent}` under `roles:` or remove it from `inherits`"
                    )),
                    &["roles", name, "inherits"],
                ));
            }
        }
        for (list, key) in [
            (role.include.as_deref().unwrap_or(&[]), "include"),
            (&role.exclude[..], "exclude"),
        ] {
            for p in list {
                if let Err(e) = Pattern::parse(p) {
                    out.push(located(
                        m,
                        Diagnostic::error(
                            Code::InvalidPermission,
                            format!("invalid scope pattern in role `{name}`: {}", e.reason),
                        )
                        .field(format!("roles.{name}.{key}"))
                        .expected("dotted lowercase segments, `*` only as a whole segment")
                        .actual(p.as_str())
                        .fix("write the wildcard as its own segment, e.g. `policies.*`"),
                        &["roles", name, key],
                    ));
                }
            }
        }
        if role.include.as_ref().is_none_or(Vec::is_empty) && inherited_includes(m, name).is_empty()
        {
            out.push(located(
                m,
                Diagnostic::info(
                    Code::EmptyScope,
                    format!("role `{name}` has no `include` and sees nothing (scope is opt-in)"),
                )
                .field(format!("roles.{name}.include"))
                .fix(
                    "add the id patterns this role may read, e.g. `include: [mission, policies.*]`",
                ),
                &["roles", name],
            ));
        }
    }
    for cycle in cycles(m) {
        let first = cycle[0].clone();
        out.push(located(
            m,
            Diagnostic::error(
                Code::RoleCycle,
                format!("role inheritance cycle: {}", cycle.join(" → ")),
            )
            .field(format!("roles.{first}.inherits"))
            .actual(cycle.join(" → "))
            .expected("an acyclic inheritance graph")
            .fix("remove one of the `inherits` links in the cycle"),
            &["roles", &first, "inherits"],
        ));
    }
    for (name, agent) in &m.agents {
        for r in &agent.roles {
            if !m.roles.contains_key(r) {
                out.push(located(
                    m,
                    Diagnostic::error(
                        Code::UnknownRole,
                        format!("agent `{name}` holds role `{r}`, which is not defined"),
                    )
                    .field(format!("agents.{name}.roles"))
                    .expected(serde_json::json!(known))
                    .actual(r.as_str())
                    .fix(format!("define role `{r}` or correct the agent's `roles`")),
                    &["agents", name, "roles"],
                ));
            }
        }
    }
    out
}

fn inherited_includes(m: &Manifest, name: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![name.to_string()];
    let mut out = Vec::new();
    while let Some(r) = stack.pop() {
        if !seen.insert(r.clone()) {
            continue;
        }
        if let Some(role) = m.roles.get(&r) {
            out.extend(role.include.clone().unwrap_or_default());
            stack.extend(role.inherits.iter().cloned());
        }
    }
    out
}

/// Each inheritance cycle once, rotated to start at its smallest role name.
fn cycles(m: &Manifest) -> Vec<Vec<String>> {
    let mut found = BTreeSet::new();
    fn walk(m: &Manifest, path: &mut Vec<String>, found: &mut BTreeSet<Vec<String>>) {
        let last = path.last().cloned().unwrap_or_default();
        let Some(role) = m.roles.get(&last) else {
            return;
        };
        for p in &role.inherits {
            if let Some(pos) = path.iter().position(|x| x == p) {
                let mut cycle: Vec<String> = path[pos..].to_vec();
                let min = cycle
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, s)| s.as_str())
                    .map(|(i, _)| i)
                    .unwrap_or(0);
                cycle.rotate_left(min);
                let first = cycle[0].clone();
                cycle.push(first);
                found.insert(cycle);
            } else if path.len() < 64 {
                path.push(p.clone());
                walk(m, path, found);
                path.pop();
            }
        }
    }
    for name in m.roles.keys() {
        walk(m, &mut vec![name.clone()], &mut found);
    }
    found.into_iter().collect()
}

/// What one consumer may see: the union over its roles and their ancestors.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The requested roles and every role they inherit (for `permissions.read` / `deny` matching).
    pub principals: BTreeSet<String>,
    pub include: Vec<Pattern>,
    pub exclude: Vec<Pattern>,
    pub redact: Vec<Redaction>,
    pub permissions: BTreeSet<String>,
    pub ceiling: Classification,
}

/// The ceiling of one role: its own declaration wins; otherwise the lowest of its
/// parents' ceilings (never more than any parent grants); otherwise `internal`.
fn role_ceiling(m: &Manifest, name: &str, depth: usize) -> Classification {
    let Some(role) = m.roles.get(name) else {
        return Classification::Public;
    };
    if let Some(c) = role.max_classification {
        return c;
    }
    if depth > 64 {
        return Classification::Internal;
    }
    role.inherits
        .iter()
        .map(|p| role_ceiling(m, p, depth + 1))
        .min()
        .unwrap_or(Classification::Internal)
}

/// Build the effective scope of several independently requested roles
/// (`agent` names are resolved to their roles by the caller). Unknown roles are an error.
pub fn scope(m: &Manifest, roles: &[String]) -> Result<Scope, String> {
    let mut principals = BTreeSet::new();
    let mut include = Vec::new();
    let mut exclude = Vec::new();
    let mut redact = Vec::new();
    let mut permissions = BTreeSet::new();
    let mut ceiling: Option<Classification> = None;
    for requested in roles {
        if !m.roles.contains_key(requested) {
            let known: Vec<&str> = m.roles.keys().map(String::as_str).collect();
            return Err(format!(
                "unknown role `{requested}` (defined roles: {})",
                known.join(", ")
            ));
        }
        // Across independently requested roles the lowest ceiling applies.
        let c = role_ceiling(m, requested, 0);
        ceiling = Some(ceiling.map_or(c, |prev| prev.min(c)));
        let mut stack = vec![requested.clone()];
        let mut seen = BTreeSet::new();
        while let Some(r) = stack.pop() {
            if !seen.insert(r.clone()) {
                continue;
            }
            let Some(role) = m.roles.get(&r) else {
                continue;
            };
            principals.insert(r.clone());
            include.extend(
                role.include
                    .iter()
                    .flatten()
                    .filter_map(|p| Pattern::parse(p).ok()),
            );
            exclude.extend(role.exclude.iter().filter_map(|p| Pattern::parse(p).ok()));
            redact.extend(role.redact.iter().cloned());
            permissions.extend(role.permissions.iter().cloned());
            stack.extend(role.inherits.iter().cloned());
        }
    }
    dedup_patterns(&mut include);
    dedup_patterns(&mut exclude);
    let mut seen_paths = BTreeMap::new();
    redact.retain(|r: &Redaction| seen_paths.insert((r.path.clone(), r.mode), ()).is_none());
    Ok(Scope {
        principals,
        include,
        exclude,
        redact,
        permissions,
        ceiling: ceiling.unwrap_or(Classification::Public),
    })
}

fn dedup_patterns(v: &mut Vec<Pattern>) {
    v.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    v.dedup_by(|a, b| a.as_str() == b.as_str());
}
