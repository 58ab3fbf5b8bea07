//! Role patterns that match no object. `exclude: [policy.internal.*]` when the ids
//! are `policies.internal.*` excludes nothing, and nothing says so: the role simply
//! sees the internal policies.

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
    for (name, role) in &m.roles {
        let lists: [(&str, &[Pattern]); 2] = [
            ("include", role.include.as_deref().unwrap_or(&[])),
            ("exclude", &role.exclude),
        ];
        for (list, patterns) in lists {
            for (i, p) in patterns.iter().enumerate() {
                if repo.objects.iter().any(|o| p.covers(&o.id)) {
                    continue;
                }
                let hint = closest_pattern(repo, p.as_str());
                let effect = if list == "include" {
                    "adds nothing to what the role sees"
                } else {
                    "keeps nothing out"
                };
                let path = [
                    PathItem::Key("roles".into()),
                    PathItem::Key(name.clone()),
                    PathItem::Key(list.into()),
                    PathItem::Index(i),
                ];
                let mut d = Diagnostic::warning(
                    Code::EmptyScope,
                    format!(
                        "`{list}` pattern `{}` of role `{name}` matches no object, so it {effect}",
                        p.as_str()
                    ),
                )
                .file(m.file.clone())
                .field(format!("roles.{name}.{list}[{i}]"))
                .expected("a pattern that matches at least one object id")
                .actual(p.as_str())
                .fix(match &hint {
                    Some(h) => format!(
                        "{}ids here look like `{h}` (`ctx list` shows every id)",
                        suggest::did_you_mean(Some(h))
                    ),
                    None => "correct the pattern (`ctx list` shows every id), or remove it".into(),
                });
                if let Some((l, c)) = m.locate(&path) {
                    d = d.at(l, c);
                }
                out.push(d);
            }
        }
    }
}

/// The pattern of the same shape that does match objects and is closest to `text`:
/// every id, cut to the pattern's length with its wildcards kept in place.
fn closest_pattern(repo: &Repo, text: &str) -> Option<String> {
    let shape: Vec<&str> = text.split('.').collect();
    let mut candidates = BTreeSet::new();
    for o in &repo.objects {
        let parts: Vec<&str> = o.id.split('.').collect();
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
    suggest::closest(text, candidates.iter().map(String::as_str)).map(str::to_string)
}
