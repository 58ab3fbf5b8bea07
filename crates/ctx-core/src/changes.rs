//! What changed between two objects, or two states of a repository — the fields
//! whose change is a governance event, not every byte.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::diag::render::terminal_safe;
use crate::model::{Authority, Classification};
use crate::view::View;

/// Bookkeeping fields left out of a comparison: the identity being compared and
/// timestamps that change with every edit.
pub const IGNORED: [&str; 4] = ["id", "version", "created", "updated"];

/// One field that differs. `None` means absent on that side.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    pub field: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// Compare two effective documents (content included), field by field, in a
/// stable order: governance fields first as they appear in `before`, then the rest.
pub fn object_diff(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<FieldChange> {
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    // Content last, so governance changes lead.
    keys.sort_by_key(|k| k.as_str() == "content");
    keys.into_iter()
        .filter(|k| !IGNORED.contains(&k.as_str()))
        .filter_map(|k| {
            let (b, a) = (before.get(k), after.get(k));
            (b != a).then(|| FieldChange {
                field: k.clone(),
                before: b.cloned(),
                after: a.cloned(),
            })
        })
        .collect()
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

fn one_line(v: &Value) -> String {
    match v {
        Value::String(s) => terminal_safe(s).into_owned(),
        other => other.to_string(),
    }
}

/// Render field changes for people, indented by `pad`. Multi-line values get a
/// line diff with one line of context.
pub fn render_changes(changes: &[FieldChange], pad: &str) -> String {
    let mut out = String::new();
    for c in changes {
        let _ = writeln!(out, "{pad}{}:", terminal_safe(&c.field));
        // Text with several lines, or a large structure, gets a line diff; the rest one line each.
        let long = |v: &Option<Value>| match v {
            Some(Value::String(s)) => s.contains('\n'),
            Some(v @ (Value::Array(_) | Value::Object(_))) => v.to_string().len() > 100,
            _ => false,
        };
        if long(&c.before) || long(&c.after) {
            let b = c.before.as_ref().map(text_of);
            let a = c.after.as_ref().map(text_of);
            let (b, a) = (b.unwrap_or_default(), a.unwrap_or_default());
            let diff = similar::TextDiff::from_lines(&b, &a);
            for (n, group) in diff.grouped_ops(1).iter().enumerate() {
                if n > 0 {
                    let _ = writeln!(out, "{pad}  …");
                }
                for op in group {
                    for change in diff.iter_changes(op) {
                        let sign = match change.tag() {
                            similar::ChangeTag::Delete => "-",
                            similar::ChangeTag::Insert => "+",
                            similar::ChangeTag::Equal => " ",
                        };
                        let line = change.value().trim_end_matches(['\n', '\r']);
                        let _ = writeln!(out, "{pad}  {sign} {}", terminal_safe(line));
                    }
                }
            }
        } else {
            match &c.before {
                Some(v) => {
                    let _ = writeln!(out, "{pad}  - {}", one_line(v));
                }
                None => {
                    let _ = writeln!(out, "{pad}  - (absent)");
                }
            }
            match &c.after {
                Some(v) => {
                    let _ = writeln!(out, "{pad}  + {}", one_line(v));
                }
                None => {
                    let _ = writeln!(out, "{pad}  + (absent)");
                }
            }
        }
    }
    out
}

/// Field changes as JSON.
pub fn changes_json(changes: &[FieldChange]) -> Value {
    Value::Array(
        changes
            .iter()
            .map(|c| json!({"field": c.field, "before": c.before, "after": c.after}))
            .collect(),
    )
}

/// A governance event worth a headline in a repository diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Highlight {
    /// Authority rose (by the manifest's precedence), e.g. reference → canonical.
    Promotion {
        key: String,
        from: String,
        to: String,
    },
    /// Classification changed; `lowered` when it became less restricted.
    Classification {
        key: String,
        from: String,
        to: String,
        lowered: bool,
    },
}

/// The difference between two repository states.
#[derive(Debug, Default)]
pub struct RepoDiff {
    /// `id[@version]` → file.
    pub added: Vec<(String, String)>,
    pub removed: Vec<(String, String)>,
    pub changed: Vec<(String, Vec<FieldChange>)>,
    pub highlights: Vec<Highlight>,
}

impl RepoDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

fn rank(precedence: &[Authority], a: Authority) -> usize {
    precedence
        .iter()
        .position(|x| *x == a)
        .unwrap_or(usize::MAX)
}

/// One object as a view shows it, for comparison: its effective document with the
/// content redacted, without the `redacted` bookkeeping. None when not visible.
fn shown(v: &View<'_>, i: usize) -> Option<Map<String, Value>> {
    let mut doc = v.document(i).ok()?.fields;
    doc.remove("redacted");
    Some(doc)
}

/// Compare what two views show, object by object (`before` and `after` are the
/// same consumer's view of two states of a repository), matched by `id[@version]`
/// (so a moved file is not an add and a remove). Authority is ranked by the later
/// state's precedence; the effective documents (defaults applied) are compared, so a
/// changed collection default shows up on every object it reaches. Values the
/// consumer's redaction removes never appear.
pub fn repo_diff(before_view: &View<'_>, after_view: &View<'_>) -> RepoDiff {
    let (before, after) = (before_view.repo(), after_view.repo());
    let index = |v: &View<'_>| -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for (i, o) in v.repo().objects.iter().enumerate() {
            if v.authorize(i).is_ok() {
                // A duplicate key keeps its first file; duplicates are validate's business.
                m.entry(o.key()).or_insert(i);
            }
        }
        m
    };
    let (b, a) = (index(before_view), index(after_view));
    let mut d = RepoDiff::default();
    let precedence = &after.manifest.precedence;
    // Match by key; then an object that only gained (or changed) its version number in
    // the same file is the same object, not a removal and an addition.
    let mut pairs: Vec<(String, usize, usize)> = Vec::new();
    let mut gone: Vec<(&String, usize)> = Vec::new();
    for (key, &i) in &b {
        match a.get(key) {
            Some(&j) => pairs.push((key.clone(), i, j)),
            None => gone.push((key, i)),
        }
    }
    let mut new: Vec<(&String, usize)> = a
        .iter()
        .filter(|(k, _)| !b.contains_key(*k))
        .map(|(k, &j)| (k, j))
        .collect();
    gone.retain(|&(_, i)| {
        let ob = &before.objects[i];
        let same = new.iter().position(|&(_, j)| {
            let oa = &after.objects[j];
            oa.id == ob.id && oa.origin.file == ob.origin.file
        });
        match same {
            Some(pos) => {
                let (k, j) = new.remove(pos);
                pairs.push((k.clone(), i, j));
                false
            }
            None => true,
        }
    });
    for (key, i) in gone {
        d.removed
            .push((key.clone(), before.objects[i].origin.file.clone()));
    }
    for (key, j) in &new {
        d.added
            .push(((*key).clone(), after.objects[*j].origin.file.clone()));
    }
    pairs.sort();
    for (key, i, j) in pairs {
        let (ob, oa) = (&before.objects[i], &after.objects[j]);
        let (Some(db), Some(da)) = (shown(before_view, i), shown(after_view, j)) else {
            continue;
        };
        let changes = object_diff(&db, &da);
        if changes.is_empty() {
            continue;
        }
        let (fa, ta) = (ob.meta.authority, oa.meta.authority);
        if rank(precedence, ta) < rank(precedence, fa) {
            d.highlights.push(Highlight::Promotion {
                key: key.clone(),
                from: fa.as_str().into(),
                to: ta.as_str().into(),
            });
        }
        let (fc, tc): (Classification, Classification) =
            (ob.meta.classification, oa.meta.classification);
        if fc != tc {
            d.highlights.push(Highlight::Classification {
                key: key.clone(),
                from: fc.as_str().into(),
                to: tc.as_str().into(),
                lowered: tc < fc,
            });
        }
        d.changed.push((key.clone(), changes));
    }
    // A new object is a promotion by the rule `ctx add` enforces (arriving canonical or
    // approved above what its id already held), so the diff flags what --promote gated.
    let mut held: BTreeMap<&str, Authority> = BTreeMap::new();
    for &i in b.values() {
        let o = &before.objects[i];
        let auth = o.meta.authority;
        held.entry(o.id.as_str())
            .and_modify(|x| {
                if rank(precedence, auth) < rank(precedence, *x) {
                    *x = auth;
                }
            })
            .or_insert(auth);
    }
    for (key, _) in &d.added {
        let o = &after.objects[a[key]];
        let auth = o.meta.authority;
        let before_auth = held.get(o.id.as_str()).copied();
        if crate::write::is_promotion(&after.manifest, auth, before_auth) {
            let from = before_auth.map_or("(new)", Authority::as_str).to_string();
            d.highlights.push(Highlight::Promotion {
                key: key.clone(),
                from,
                to: auth.as_str().into(),
            });
        }
    }
    // Promotions first, then classification changes; each by id.
    d.highlights.sort_by(|x, y| {
        let k = |h: &Highlight| match h {
            Highlight::Promotion { key, .. } => (0, key.clone()),
            Highlight::Classification { key, .. } => (1, key.clone()),
        };
        k(x).cmp(&k(y))
    });
    d
}

impl Highlight {
    /// One line for people.
    pub fn text(&self) -> String {
        let h = self;
        match h {
            Highlight::Promotion { key, from, to } => {
                format!("⚠ authority promoted: {key}  {from} → {to}")
            }
            Highlight::Classification {
                key,
                from,
                to,
                lowered,
            } => format!(
                "⚠ classification {}: {key}  {from} → {to}",
                if *lowered { "lowered" } else { "raised" }
            ),
        }
    }
}

impl RepoDiff {
    /// The report for people: governance headlines, then added, removed and changed objects.
    pub fn text(&self, label: &str, ns: &str) -> String {
        let d = self;
        let mut out = format!("Context changes in {ns}: {label}\n\n");
        if !d.highlights.is_empty() {
            out.push_str("Governance:\n");
            for h in &d.highlights {
                let _ = writeln!(out, "  {}", h.text());
            }
            out.push('\n');
        }
        for (key, file) in &d.added {
            let _ = writeln!(out, "+ {key}  (added)  {file}");
        }
        for (key, file) in &d.removed {
            let _ = writeln!(out, "- {key}  (removed)  {file}");
        }
        for (key, changes) in &d.changed {
            let _ = writeln!(out, "~ {key}  (changed)");
            out.push_str(&render_changes(changes, "    "));
        }
        let promotions = d
            .highlights
            .iter()
            .filter(|h| matches!(h, Highlight::Promotion { .. }))
            .count();
        let _ = writeln!(
        out,
        "\n{} added, {} removed, {} changed; {} authority promotion(s), {} classification change(s)",
        d.added.len(),
        d.removed.len(),
        d.changed.len(),
        promotions,
        d.highlights.len() - promotions
    );
        out
    }

    /// The report for machines; `from`/`to` are the revisions as given, `bname`/`aname` what they resolved to.
    pub fn json(&self, from: &str, bname: &str, to: Option<&str>, aname: &str) -> Value {
        let d = self;
        let highlights: Vec<Value> = d
        .highlights
        .iter()
        .map(|h| match h {
            Highlight::Promotion { key, from, to } => {
                json!({"kind": "authority-promotion", "id": key, "from": from, "to": to})
            }
            Highlight::Classification {
                key,
                from,
                to,
                lowered,
            } => json!({"kind": "classification-change", "id": key, "from": from, "to": to, "lowered": lowered}),
        })
        .collect();
        json!({
            "from": {"rev": from, "commit": bname},
            "to": {"rev": to, "commit": if to.is_some() { Value::from(aname) } else { Value::Null }},
            "added": d.added.iter().map(|(k, f)| json!({"id": k, "file": f})).collect::<Vec<_>>(),
            "removed": d.removed.iter().map(|(k, f)| json!({"id": k, "file": f})).collect::<Vec<_>>(),
            "changed": d.changed.iter().map(|(k, c)| json!({"id": k, "changes": changes_json(c)})).collect::<Vec<_>>(),
            "highlights": highlights,
        })
    }
}

/// Two objects compared as one consumer sees them (`ctx diff id@1 id@2`).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectComparison {
    /// Indexes into the repository's objects.
    pub before: usize,
    pub after: usize,
    pub changes: Vec<FieldChange>,
}

/// Find `x` and `y` (`id` or `id@version`) in what `v` shows and compare them
/// field by field. Both sides are the consumer's documents: redacted values never
/// reach the comparison. `p p@2` compares p's other version with p@2.
pub fn compare_objects(v: &View<'_>, x: &str, y: &str) -> crate::error::Result<ObjectComparison> {
    use crate::error::Error;
    use crate::model::ObjectRef;
    let missing = |t: &str| Error::NotFound(format!("no object `{t}` is visible here"));
    let (rx, ry) = (ObjectRef::parse(x), ObjectRef::parse(y));
    let j = v.find(&ry, None).ok_or_else(|| missing(y))?;
    let i = v.find(&rx, Some(j)).ok_or_else(|| missing(x))?;
    let j = if i == j {
        v.find(&ry, Some(i)).ok_or_else(|| missing(y))?
    } else {
        j
    };
    let shown = |k: usize, t: &str| {
        v.document(k)
            .map(|d| {
                let mut f = d.fields;
                f.remove("redacted");
                f
            })
            .map_err(|w| Error::Invalid(format!("`{t}` is withheld: {}", w.detail)))
    };
    let (before, after) = (shown(i, x)?, shown(j, y)?);
    Ok(ObjectComparison {
        before: i,
        after: j,
        changes: object_diff(&before, &after),
    })
}

impl ObjectComparison {
    /// The JSON document: both sides by key and file, and the changes.
    pub fn json(&self, repo: &crate::load::Repo) -> Value {
        let (b, a) = (&repo.objects[self.before], &repo.objects[self.after]);
        json!({
            "before": {"key": b.key(), "file": b.origin.file},
            "after": {"key": a.key(), "file": a.origin.file},
            "changes": changes_json(&self.changes),
        })
    }

    /// The people view: a heading and the changed fields.
    pub fn text(&self, repo: &crate::load::Repo) -> String {
        let (b, a) = (&repo.objects[self.before], &repo.objects[self.after]);
        let (kb, ka) = (b.key(), a.key());
        if self.changes.is_empty() {
            return format!("= {kb} and {ka} do not differ in any governance field or content\n");
        }
        let title = if b.id == a.id {
            b.id.clone()
        } else {
            format!("{kb} → {ka}")
        };
        format!(
            "~ {title}  (changed: {kb} → {ka})\n{}",
            render_changes(&self.changes, "    ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_versions_compare_as_the_consumer_sees_them() {
        use crate::view::{View, Who};
        let files = [
            ("opencontext.yaml", "opencontext: \"1.0\"\nid: acme\nname: ACME\ncollections:\n  policies: ./context/policies/**\nroles:\n  support:\n    include: [policies.*]\n"),
            ("context/policies/refunds.md", "---\nid: policies.refunds\ntype: policy\nowner: support\nversion: 1\n---\nThirty days.\n"),
            ("context/policies/refunds-2.md", "---\nid: policies.refunds\ntype: policy\nowner: billing\nversion: 2\nsupersedes: [policies.refunds@1]\n---\nSixty days.\n"),
        ];
        let (_dir, repo) = crate::testutil::repo_from(&files);
        let at = crate::time::parse_at("2026-09-01").unwrap();
        let who = Who {
            agent: None,
            roles: vec!["support".into()],
        };
        let v = View::open(&repo, &who, at).unwrap();
        let c = compare_objects(&v, "policies.refunds@1", "policies.refunds@2").unwrap();
        let fields: Vec<&str> = c.changes.iter().map(|x| x.field.as_str()).collect();
        assert!(
            fields.contains(&"owner") && fields.contains(&"content"),
            "{fields:?}"
        );
        assert!(
            c.text(&repo).starts_with(
                "~ policies.refunds  (changed: policies.refunds@1 → policies.refunds@2)\n"
            ),
            "{}",
            c.text(&repo)
        );
        assert_eq!(c.json(&repo)["after"]["key"], "policies.refunds@2");
        let same = compare_objects(&v, "policies.refunds@2", "policies.refunds@2");
        assert!(same.is_err() || same.unwrap().changes.is_empty());
        let e = compare_objects(&v, "policies.refunds@1", "policies.nothing").unwrap_err();
        assert!(matches!(e, crate::error::Error::NotFound(_)));
    }

    #[test]
    fn added_objects_are_promotions_by_the_rule_add_enforces() {
        use crate::view::{View, Who};
        let head = "opencontext: \"1.0\"\nid: acme\nname: ACME\ncollections:\n  p: ./context/**\n";
        let obj = |id: &str, v: u32, auth: &str| {
            format!("---\nid: {id}\ntype: policy\nowner: o\nversion: {v}\nauthority: {auth}\n---\nText.\n")
        };
        let before = [
            ("opencontext.yaml", head.to_string()),
            ("context/a.md", obj("p.a", 1, "reference")),
            ("context/b.md", obj("p.b", 1, "canonical")),
        ];
        let after = [
            ("opencontext.yaml", head.to_string()),
            ("context/a.md", obj("p.a", 1, "reference")),
            ("context/a2.md", obj("p.a", 2, "approved")),
            ("context/b.md", obj("p.b", 1, "canonical")),
            ("context/b2.md", obj("p.b", 2, "canonical")),
            ("context/c.md", obj("p.c", 1, "canonical")),
            ("context/d.md", obj("p.d", 1, "reference")),
        ];
        let (_d1, rb) = crate::testutil::repo_from(&borrowed(&before));
        let (_d2, ra) = crate::testutil::repo_from(&borrowed(&after));
        let at = crate::time::parse_at("2026-09-01").unwrap();
        let who = Who::default();
        let (vb, va) = (
            View::open(&rb, &who, at).unwrap(),
            View::open(&ra, &who, at).unwrap(),
        );
        let d = repo_diff(&vb, &va);
        let promoted: Vec<(String, String, String)> = d
            .highlights
            .iter()
            .filter_map(|h| match h {
                Highlight::Promotion { key, from, to } => {
                    Some((key.clone(), from.clone(), to.clone()))
                }
                _ => None,
            })
            .collect();
        // p.a rose from reference; p.c arrived canonical; p.b kept canonical; p.d is no claim.
        assert_eq!(
            promoted,
            vec![
                ("p.a@2".into(), "reference".into(), "approved".into()),
                ("p.c@1".into(), "(new)".into(), "canonical".into()),
            ]
        );
    }

    fn borrowed<'a>(f: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
        f.iter().map(|(p, c)| (*p, c.as_str())).collect()
    }

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn bookkeeping_is_ignored_and_content_comes_last() {
        let a = map(
            json!({"id": "p", "version": 1, "updated": "x", "authority": "reference", "content": "a\n", "owner": "s"}),
        );
        let b = map(
            json!({"id": "p", "version": 2, "updated": "y", "authority": "canonical", "content": "b\n", "owner": "s"}),
        );
        let c = object_diff(&a, &b);
        let fields: Vec<&str> = c.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, vec!["authority", "content"]);
        let text = render_changes(&c, "    ");
        assert!(
            text.contains("    authority:\n      - reference\n      + canonical\n"),
            "{text}"
        );
    }

    #[test]
    fn multiline_content_gets_a_line_diff() {
        let a = map(json!({"content": "one\ntwo\nthree\nfour\nfive\n"}));
        let b = map(json!({"content": "one\ntwo\n3\nfour\nfive\n"}));
        let text = render_changes(&object_diff(&a, &b), "");
        assert!(text.contains("  - three\n  + 3\n"), "{text}");
        assert!(text.contains("    two\n"), "context line missing: {text}");
        assert!(!text.contains("one"), "too much context: {text}");
    }

    #[test]
    fn absent_fields_are_named() {
        let a = map(json!({"owner": "s"}));
        let b = map(json!({}));
        let text = render_changes(&object_diff(&a, &b), "");
        assert!(text.contains("- s\n  + (absent)"), "{text}");
    }
}
