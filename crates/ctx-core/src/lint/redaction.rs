//! Redaction rules that can never apply: a path that names no field of any object
//! the rule covers (a typo such as `contacts[*].emial` leaves every address in the
//! bundle), and an object's own rules when its content is prose, which has no fields.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::diag::{Code, Diagnostic};
use crate::load::Repo;
use crate::manifest::roles;
use crate::object::ContextObject;
use crate::resolve::authorize::{authorize, Principals};
use crate::resolve::redact::Rule;
use crate::schema::PathItem;

use super::suggest;

/// What is known statically about an object's content.
enum Content<'a> {
    /// Structured inline content: rules address its fields.
    Fields(&'a Value),
    /// A Markdown body or other text: no fields at all.
    Prose,
    /// Read at resolution time (`content_uri`) or encrypted: unknown here.
    Unknown,
    None,
}

fn content(o: &ContextObject) -> Content<'_> {
    if o.meta.content_uri.is_some() || o.meta.sealed.is_some() {
        return Content::Unknown;
    }
    match &o.content {
        Some(Value::String(_)) => Content::Prose,
        Some(v) => Content::Fields(v),
        None => Content::None,
    }
}

/// Field paths of `v` in redaction syntax (`contacts[*].email`), for suggestions.
/// `path` is a scratch buffer holding the prefix: most objects share their shape,
/// so a path is allocated only the first time it is seen.
fn paths(v: &Value, path: &mut String, depth: usize, out: &mut BTreeSet<String>) {
    if depth == 0 || out.len() > 4096 {
        return;
    }
    let note = |path: &String, out: &mut BTreeSet<String>| {
        if !out.contains(path.as_str()) {
            out.insert(path.clone());
        }
    };
    let len = path.len();
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if len > 0 {
                    path.push('.');
                }
                path.push_str(k);
                paths(child, path, depth - 1, out);
                note(path, out);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            path.push_str("[*]");
            for item in items.iter().take(16) {
                paths(item, path, depth - 1, out);
            }
            note(path, out);
            path.truncate(len);
        }
        _ => {}
    }
}

/// Every field path of the structured content of `objects`.
fn known_paths<'a>(objects: impl Iterator<Item = &'a ContextObject>) -> BTreeSet<String> {
    let mut known = BTreeSet::new();
    let mut scratch = String::new();
    for o in objects {
        if let Content::Fields(v) = content(o) {
            paths(v, &mut scratch, 5, &mut known);
        }
    }
    known
}

/// Does any of `objects` (by their content) take `rule`? None when some content is
/// unknown, so the lint cannot tell.
fn any_applies<'a>(rule: &Rule, objects: impl Iterator<Item = &'a ContextObject>) -> Option<bool> {
    let mut unknown = false;
    for o in objects {
        match content(o) {
            Content::Fields(v) if rule.reaches(v) => return Some(true),
            Content::Unknown => unknown = true,
            _ => {}
        }
    }
    (!unknown).then_some(false)
}

fn suggestion<'a>(rule: &Rule, objects: impl Iterator<Item = &'a ContextObject>) -> Option<String> {
    let known = known_paths(objects);
    suggest::closest(&rule.path, known.iter().map(String::as_str)).map(str::to_string)
}

fn unmatched(rule: &Rule, whose: &str, readers: &str, hint: Option<String>) -> Diagnostic {
    Diagnostic::warning(
        Code::ManifestInvalid,
        format!(
            "redaction path `{}` of {whose} matches no field of any object {readers}, so it redacts nothing",
            rule.path
        ),
    )
    .expected("a path naming a field of structured content (`ctx get <id>` shows the fields)")
    .actual(rule.path.as_str())
    .fix(match hint {
        Some(h) => format!("{}(a field some object has)", suggest::did_you_mean(Some(&h))),
        None => "correct the path, or remove the rule".into(),
    })
}

/// The objects a consumer can read, authorized on demand and remembered, so
/// several rules of one role walk them without authorizing any object twice.
struct Readable<'a, F> {
    objects: &'a [ContextObject],
    can_read: F,
    /// The readable objects found so far, and how many objects were looked at.
    seen: std::cell::RefCell<(Vec<&'a ContextObject>, usize)>,
}

impl<'a, F: Fn(&ContextObject) -> bool> Readable<'a, F> {
    fn new(objects: &'a [ContextObject], can_read: F) -> Self {
        Readable {
            objects,
            can_read,
            seen: Default::default(),
        }
    }

    /// The `k`-th readable object, authorizing further objects only when needed.
    fn get(&self, k: usize) -> Option<&'a ContextObject> {
        let mut seen = self.seen.borrow_mut();
        while seen.0.len() <= k && seen.1 < self.objects.len() {
            let o = &self.objects[seen.1];
            seen.1 += 1;
            if (self.can_read)(o) {
                seen.0.push(o);
            }
        }
        seen.0.get(k).copied()
    }

    fn iter(&self) -> impl Iterator<Item = &'a ContextObject> + '_ {
        (0..).map_while(|k| self.get(k))
    }
}

pub fn check(repo: &Repo, out: &mut Vec<Diagnostic>) {
    let m = &repo.manifest;
    let healthy = |o: &&ContextObject| o.meta.faults.is_empty();
    for (i, rule) in m.redact.iter().enumerate() {
        if any_applies(rule, repo.objects.iter().filter(healthy)) == Some(false) {
            let hint = suggestion(rule, repo.objects.iter().filter(healthy));
            let mut d = unmatched(rule, "the manifest", "has", hint)
                .file(m.file.clone())
                .field(format!("redact[{i}].path"));
            if let Some((l, c)) = m.locate(&[PathItem::Key("redact".into()), PathItem::Index(i)]) {
                d = d.at(l, c);
            }
            out.push(d);
        }
    }
    if !super::scope::policy_broken(repo) {
        for (name, role) in &m.roles {
            if role.redact.is_empty() {
                continue;
            }
            let Ok(scope) = roles::scope(m, std::slice::from_ref(name)) else {
                continue;
            };
            let who = Principals {
                consumer: name,
                scope: &scope,
            };
            // Lazy: a rule that applies usually does so early, so most objects are
            // never authorized here; each object is authorized at most once per role.
            let readable = Readable::new(&repo.objects, |o| authorize(o, &who).is_ok());
            for (i, rule) in role.redact.iter().enumerate() {
                if any_applies(rule, readable.iter()) != Some(false) {
                    continue;
                }
                let hint = suggestion(rule, readable.iter());
                let mut d = unmatched(rule, &format!("role `{name}`"), "the role can read", hint)
                    .file(m.file.clone())
                    .field(format!("roles.{name}.redact[{i}].path"));
                let path = [
                    PathItem::Key("roles".into()),
                    PathItem::Key(name.clone()),
                    PathItem::Key("redact".into()),
                    PathItem::Index(i),
                ];
                if let Some((l, c)) = m.locate(&path) {
                    d = d.at(l, c);
                }
                out.push(d);
            }
        }
    }
    for o in &repo.objects {
        // Cheap test before parsing the document: most objects declare no rules.
        if !o.mentions("\"redact\"") {
            continue;
        }
        let Some(Ok(rules)) = o.field("redact").as_ref().map(Rule::list) else {
            continue;
        };
        let problem = match content(o) {
            Content::Prose => Some((
                "its content is prose (a Markdown body), which has no fields to redact".to_string(),
                "move the sensitive values into structured content (a YAML or JSON object's `content` mapping), or remove the rules".to_string(),
            )),
            Content::None => Some((
                "the object has no content".to_string(),
                "remove the rules".to_string(),
            )),
            Content::Fields(v) => rules
                .iter()
                .find(|r| !r.reaches(v))
                .map(|r| {
                    let known = known_paths(std::iter::once(o));
                    let hint = suggest::closest(&r.path, known.iter().map(String::as_str));
                    (
                        format!("`{}` names no field of its content", r.path),
                        match hint {
                            Some(h) => format!("{}(a field of the content)", suggest::did_you_mean(Some(h))),
                            None => "correct the path, or remove the rule".into(),
                        },
                    )
                }),
            Content::Unknown => None,
        };
        if let Some((why, fix)) = problem {
            let d = Diagnostic::warning(
                Code::SchemaInvalid,
                format!("the object's own redaction rules can never apply: {why}"),
            )
            .field("redact")
            .fix(fix);
            out.push(super::at_field(o, "redact", d));
        }
    }
}
