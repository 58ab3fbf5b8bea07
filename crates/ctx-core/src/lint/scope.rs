//! Role patterns that match no object. `exclude: [policy.internal.*]` when the ids
//! are `policies.internal.*` excludes nothing, and nothing would say so: the role
//! simply sees the internal policies. Such an exclude is an error in every mode (the
//! default pre-commit hook blocks it); an include that adds nothing is a warning.

use std::collections::BTreeSet;

use crate::diag::{Code, Diagnostic, Severity};
use crate::load::Repo;
use crate::pattern::Pattern;
use crate::schema::PathItem;

use super::suggest;

/// Is any error among the policy findings? Then the consumer model is not trusted
/// and the lints that reason about it stay quiet (the errors say enough).
pub(super) fn policy_broken(repo: &Repo) -> bool {
    repo.manifest
        .policy_findings
        .iter()
        .any(|d| d.severity == Severity::Error)
}

pub fn check(repo: &Repo, out: &mut Vec<Diagnostic>) {
    if policy_broken(repo) || repo.objects.is_empty() {
        return;
    }
    let m = &repo.manifest;
    let ids = SortedIds::of(repo);
    for (name, role) in &m.roles {
        let reserved = reserved_excludes(repo, name, role, out);
        let lists: [(&str, &[Pattern]); 2] = [
            ("include", role.include.as_deref().unwrap_or(&[])),
            ("exclude", &role.exclude),
        ];
        for (list, patterns) in lists {
            for (i, p) in patterns.iter().enumerate() {
                if ids.any_covered(p) {
                    continue;
                }
                let hint = closest_pattern(repo, p.as_str());
                let at = [
                    PathItem::Key("roles".into()),
                    PathItem::Key(name.clone()),
                    PathItem::Key(list.into()),
                    PathItem::Index(i),
                ];
                let d = if list == "exclude" {
                    // An exclude that keeps nothing out widens access against its
                    // author's intent, so it is an error in every mode, unless the
                    // role says it guards ids still to come.
                    if reserved.contains(p.as_str()) {
                        continue;
                    }
                    Diagnostic::error(
                        Code::EmptyScope,
                        format!(
                            "`exclude` pattern `{}` of role `{name}` matches no object, so it keeps nothing out",
                            p.as_str()
                        ),
                    )
                    .fix(format!(
                        "{}correct the pattern (`ctx list` shows every id); to keep it for ids that do not exist yet, list it under `roles.{name}.extensions.ctx.scope.reserved_exclude`",
                        suggest::did_you_mean(hint.as_deref())
                    ))
                } else {
                    // An include that adds nothing hides, never widens: a warning, and
                    // only when it is a typo away from ids that exist (one with no
                    // near match is taken as deliberate).
                    let Some(hint) = hint else {
                        continue;
                    };
                    Diagnostic::warning(
                        Code::EmptyScope,
                        format!(
                            "`include` pattern `{}` of role `{name}` matches no object, so it adds nothing to what the role sees",
                            p.as_str()
                        ),
                    )
                    .fix(format!(
                        "{}ids here look like `{hint}` (`ctx list` shows every id)",
                        suggest::did_you_mean(Some(&hint))
                    ))
                };
                let mut d = d
                    .file(m.file.clone())
                    .field(format!("roles.{name}.{list}[{i}]"))
                    .expected("a pattern that matches at least one object id")
                    .actual(p.as_str());
                if let Some((l, c)) = m.locate(&at) {
                    d = d.at(l, c);
                }
                out.push(d);
            }
        }
    }
}

/// `roles.<name>.extensions.ctx.scope.reserved_exclude`: exclude patterns the role keeps
/// for ids that do not exist yet. Anything there that is not a list of the role's own
/// exclude patterns is an error (a reservation must not hide a typo of its own).
fn reserved_excludes<'r>(
    repo: &'r Repo,
    name: &str,
    role: &crate::manifest::roles::Role,
    out: &mut Vec<Diagnostic>,
) -> BTreeSet<&'r str> {
    let m = &repo.manifest;
    let mut reserved = BTreeSet::new();
    let Some(value) = m
        .raw
        .get("roles")
        .and_then(|r| r.get(name))
        .and_then(|r| r.get("extensions"))
        .and_then(|e| e.get("ctx.scope"))
        .and_then(|c| c.get("reserved_exclude"))
    else {
        return reserved;
    };
    let field = format!("roles.{name}.extensions.ctx.scope.reserved_exclude");
    let at = |extra: Option<usize>| {
        let mut path = vec![
            PathItem::Key("roles".into()),
            PathItem::Key(name.to_string()),
            PathItem::Key("extensions".into()),
            PathItem::Key("ctx.scope".into()),
            PathItem::Key("reserved_exclude".into()),
        ];
        if let Some(i) = extra {
            path.push(PathItem::Index(i));
        }
        m.locate(&path)
    };
    let Some(items) = value.as_array() else {
        let mut d = Diagnostic::error(
            Code::ManifestInvalid,
            format!("`{field}` must be a list of the role's exclude patterns"),
        )
        .file(m.file.clone())
        .field(field.clone())
        .expected("a list of patterns")
        .actual(crate::manifest::roles::type_name(value))
        .fix("write it as a list, e.g. `reserved_exclude: [hr.*]`");
        if let Some((l, c)) = at(None) {
            d = d.at(l, c);
        }
        out.push(d);
        return reserved;
    };
    for (i, item) in items.iter().enumerate() {
        let own = item
            .as_str()
            .filter(|s| role.exclude.iter().any(|p| p.as_str() == *s));
        match own {
            Some(s) => {
                reserved.insert(s);
            }
            None => {
                let actual = item.as_str().map_or_else(
                    || crate::manifest::roles::type_name(item).to_string(),
                    str::to_string,
                );
                let mut d = Diagnostic::error(
                    Code::ManifestInvalid,
                    format!("`{field}[{i}]` is not one of role `{name}`'s exclude patterns"),
                )
                .file(m.file.clone())
                .field(format!("{field}[{i}]"))
                .expected(serde_json::json!(role
                    .exclude
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()))
                .actual(actual)
                .fix(
                    "list only patterns that also appear, spelt the same, in the role's `exclude`",
                );
                if let Some((l, c)) = at(Some(i)) {
                    d = d.at(l, c);
                }
                out.push(d);
            }
        }
    }
    reserved
}

/// Every distinct id, sorted. The ids a pattern covers share its literal prefix,
/// so each pattern looks only at the ids under that prefix: a pattern that matches
/// nothing no longer scans the whole repository.
struct SortedIds<'a>(Vec<&'a str>);

impl<'a> SortedIds<'a> {
    fn of(repo: &'a Repo) -> SortedIds<'a> {
        // Objects come sorted by id, so the sort only confirms the order.
        Self::from_ids(repo.objects.iter().map(|o| o.id.as_str()))
    }

    fn from_ids(ids: impl Iterator<Item = &'a str>) -> SortedIds<'a> {
        let mut ids: Vec<&str> = ids.collect();
        ids.sort_unstable();
        ids.dedup();
        SortedIds(ids)
    }

    /// Does `p` cover any id?
    fn any_covered(&self, p: &Pattern) -> bool {
        let Some(prefix) = p.literal_prefix() else {
            return self.0.iter().any(|id| p.covers(id));
        };
        if self.0.binary_search(&prefix.as_str()).is_ok() && p.covers(&prefix) {
            return true;
        }
        let under = format!("{prefix}.");
        let from = self.0.partition_point(|id| *id < under.as_str());
        self.0[from..]
            .iter()
            .take_while(|id| id.starts_with(&under))
            .any(|id| p.covers(id))
    }
}

/// The pattern of the same shape that does match objects and is closest to `text`:
/// every id, cut to the pattern's length with its wildcards kept in place.
fn closest_pattern(repo: &Repo, text: &str) -> Option<String> {
    let shape: Vec<&str> = text.split('.').collect();
    let mut candidates = BTreeSet::new();
    // Ids as declared, and as their paths give them: a folder people see in the tree
    // is what a pattern is often written after.
    let path_ids: Vec<String> = repo
        .objects
        .iter()
        .filter_map(|o| super::ids::path_id(repo, o))
        .collect();
    let ids = repo
        .objects
        .iter()
        .map(|o| o.id.as_str())
        .chain(path_ids.iter().map(String::as_str));
    for id in ids {
        let parts: Vec<&str> = id.split('.').collect();
        if parts.len() + usize::from(shape.last() == Some(&"*")) < shape.len() {
            continue;
        }
        let candidate: Vec<&str> = shape
            .iter()
            .enumerate()
            .map(|(i, s)| match (*s, parts.get(i)) {
                ("*", _) | (_, None) => "*",
                (_, Some(p)) => p,
            })
            .collect();
        candidates.insert(candidate.join("."));
    }
    // Segment by segment: every segment must be a near spelling of the candidate's
    // (`policy` ~ `policies`), so `policies.internal.*` never suggests `policies.expired.*`.
    let similarity = |c: &str| -> Option<f64> {
        let mut total = 0.0;
        for (a, b) in shape.iter().zip(c.split('.')) {
            let sim = strsim::jaro_winkler(a, b);
            if sim < 0.85 {
                return None;
            }
            total += sim;
        }
        Some(total)
    };
    candidates
        .iter()
        .filter(|c| c.as_str() != text)
        .filter_map(|c| similarity(c).map(|s| (s, c)))
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, c)| c.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_lookup_agrees_with_a_full_scan() {
        let ids = [
            "customers",
            "customers-x.churn-risk",
            "customers.acme",
            "customers.acme.churn-risk",
            "customersx.a.churn-risk",
            "mission",
            "policies.internal",
            "products.a.b",
        ];
        let sorted = SortedIds::from_ids(ids.iter().rev().copied());
        for p in [
            "customers.*.churn-risk",
            "customers.*",
            "customers",
            "customers.*.*.x",
            "mission",
            "missions",
            "policies.internal.*",
            "policies.*.x",
            "products.a",
            "products.*",
            "*",
            "*.acme",
            "*.nothing",
        ] {
            let p = Pattern::parse(p).unwrap();
            let scan = ids.iter().any(|id| p.covers(id));
            assert_eq!(sorted.any_covered(&p), scan, "{}", p.as_str());
        }
    }
}
