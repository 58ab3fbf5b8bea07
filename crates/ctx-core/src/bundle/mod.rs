//! Compiling a resolution into a Context Bundle, and its deterministic digest.

mod carried;
pub mod explain;
pub mod render;

use rayon::prelude::*;
use serde_json::{json, Map, Value};

use crate::load::Repo;
use crate::resolve::Resolution;

/// Fields copied from an object into the bundle (besides content and computed ones).
const CARRIED: [&str; 14] = [
    "id",
    "type",
    "layer",
    "title",
    "summary",
    "content_type",
    "authority",
    "trust",
    "owner",
    "version",
    "updated",
    "classification",
    "durability",
    "tags",
];

/// Keys that vary between otherwise identical runs and are left out of the digest.
pub const VOLATILE: [&str; 4] = ["generated_at", "bundle_id", "digest", "as_of"];

/// Build the bundle document (valid against the bundle schema).
/// The selected objects' content is moved into the bundle (not copied).
pub fn compile(repo: &Repo, r: &mut Resolution, generated_at: &str) -> Value {
    let m = &repo.manifest;
    // Each selected object compiles independently: build them in parallel, in order.
    let compiled: Vec<(Value, Value, usize, bool)> = r
        .included
        .par_iter_mut()
        .map(|s| compile_object(repo, s))
        .collect();
    let mut objects = Vec::with_capacity(compiled.len());
    let mut provenance = Vec::with_capacity(compiled.len());
    let mut characters = 0usize;
    let mut redacted_count = 0usize;
    for (object, prov, chars, redacted) in compiled {
        objects.push(object);
        provenance.push(prov);
        characters += chars;
        redacted_count += usize::from(redacted);
    }
    let excluded: Vec<Value> = r
        .excluded
        .iter()
        .map(|e| {
            let mut x = Map::new();
            x.insert("id".into(), json!(e.id));
            x.insert("reason".into(), json!(e.reason));
            if let Some(d) = &e.detail {
                x.insert("detail".into(), json!(d));
            }
            if let Some(by) = &e.outranked_by {
                x.insert("outranked_by".into(), json!(by));
            }
            Value::Object(x)
        })
        .collect();
    let warnings: Vec<Value> = r
        .warnings
        .iter()
        .map(|w| {
            let mut x = Map::new();
            x.insert("code".into(), json!(w.code));
            x.insert("message".into(), json!(w.message));
            if let Some(id) = &w.id {
                x.insert("id".into(), json!(id));
            }
            x.insert("severity".into(), json!(w.severity.as_str()));
            Value::Object(x)
        })
        .collect();
    let req = &r.request;
    let mut doc = Map::new();
    doc.insert("opencontext".into(), json!(crate::SPEC_VERSION));
    doc.insert("bundle_id".into(), json!(""));
    doc.insert("generated_at".into(), json!(generated_at));
    doc.insert("namespace".into(), json!(m.id));
    doc.insert(
        "consumer".into(),
        json!({"type": req.consumer.kind.as_str(), "id": req.consumer.id, "roles": req.consumer.roles}),
    );
    if let Some(t) = &req.task {
        doc.insert("task".into(), json!(t));
    }
    doc.insert("as_of".into(), json!(crate::time::format(&req.at)));
    doc.insert("objects".into(), Value::Array(objects));
    doc.insert("excluded".into(), Value::Array(excluded));
    doc.insert("warnings".into(), Value::Array(warnings));
    doc.insert("provenance".into(), Value::Array(provenance));
    doc.insert("permissions".into(), json!(r.permissions));
    doc.insert(
        "stats".into(),
        json!({
            "considered": r.considered,
            "included": r.included.len(),
            "excluded": r.excluded.len(),
            "redacted": redacted_count,
            "characters": characters,
        }),
    );
    let mut bundle = Value::Object(doc);
    let d = digest(&bundle);
    bundle["bundle_id"] = json!(crate::canonical::bundle_id(&d));
    bundle["digest"] = json!(d);
    bundle
}

/// One bundled object and its provenance entry, plus its character count and
/// whether redaction applied. Moves the selection's content.
fn compile_object(repo: &Repo, s: &mut crate::resolve::Selected) -> (Value, Value, usize, bool) {
    let o = &repo.objects[s.index];
    // The fields the bundle carries from the effective document without its content
    // (the selection holds the content the consumer sees): only those are built.
    let mut fields = match &s.decrypted {
        Some(d) => carried::from_map(&d.fields),
        None => carried::from_doc(o.document()),
    };
    let mut b = Map::new();
    for (key, slot) in CARRIED.iter().zip(fields.iter_mut()) {
        if let Some(v) = slot.take() {
            b.insert(key.to_string(), v);
        }
    }
    if let Some(t) = s.trust {
        b.insert("trust".into(), json!(t.as_str()));
    }
    let mut characters = 0;
    if let Some(c) = s.content.take() {
        characters = match &c {
            Value::String(t) => t.chars().count(),
            other => other.to_string().chars().count(),
        };
        // Declared type first, then what the source adapter reported, then a guess
        // from the shape of inline content.
        if !b.contains_key("content_type") {
            let ct = match s.content_type.take() {
                Some(t) => t,
                None if c.is_string() => "text/markdown".into(),
                None => "application/json".into(),
            };
            b.insert("content_type".into(), json!(ct));
        }
        b.insert("content".into(), c);
    }
    b.insert("lifecycle".into(), json!(s.lifecycle.as_str()));
    let redacted = !s.redacted.is_empty();
    if redacted {
        b.insert("redacted".into(), json!(s.redacted));
    }
    let sources = fields[carried::SOURCES].take();
    if let Some(src) = &sources {
        b.insert("sources".into(), src.clone());
    }
    if let Some(x) = fields[carried::EXTENSIONS].take() {
        b.insert("extensions".into(), x);
    }
    let mut p = Map::new();
    p.insert("id".into(), json!(o.id));
    if o.meta.canonical_source {
        p.insert("canonical_source".into(), json!(true));
    }
    if let Some(src) = sources {
        p.insert("sources".into(), src);
    }
    (Value::Object(b), Value::Object(p), characters, redacted)
}

/// sha256 over RFC 8785 (JCS) bytes of the bundle without its volatile keys,
/// streamed into the hasher (bundles can be tens of megabytes).
pub fn digest(bundle: &Value) -> String {
    crate::jcs::sha256_without(bundle, &VOLATILE)
}

#[cfg(test)]
mod tests {
    use crate::resolve::{self, ResolveOptions};
    use crate::view::Who;

    /// Releasing the repository's content before compiling changes nothing in the
    /// bundle: the resolution holds its own copy of everything the consumer sees
    /// (prose, structured content, redacted content).
    #[test]
    fn a_bundle_compiled_after_releasing_content_is_the_same() {
        let (_dir, mut repo) = crate::testutil::repo_from(&[
            (
                "opencontext.yaml",
                "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./notes/**\n  people:\n    source: ./people/**\n    type: customer\n\
                 roles:\n  reader:\n    include: [\"notes.*\", \"people.*\"]\n    exclude: [notes.secret]\n    redact:\n      - path: ssn\n        mode: remove\n",
            ),
            ("notes/a.md", "---\ntitle: Refunds\n---\nRefunds within 30 days.\n"),
            ("notes/secret.md", "---\ntitle: Hidden\n---\nnot for readers\n"),
            (
                "people/acme.yaml",
                "title: ACME\ncontent:\n  name: ACME\n  ssn: 123-45-6789\n  plan: gold\n",
            ),
        ]);
        let who = Who {
            agent: None,
            roles: vec!["reader".into()],
        };
        let at = crate::time::parse_at("2026-01-01").expect("a date");
        let mut opts = ResolveOptions::new(who, at);
        opts.task = Some("refunds".into());
        let (kept, want) = resolve::bundle(&repo, &opts, "2026-01-01T00:00:00Z").expect("resolves");
        let (released, got) =
            resolve::bundle_releasing_content(&mut repo, &opts, "2026-01-01T00:00:00Z")
                .expect("resolves");
        assert_eq!(got, want);
        assert_eq!(released.excluded, kept.excluded);
        assert_eq!(want["objects"].as_array().map(Vec::len), Some(2), "{want}");
        let text = want.to_string();
        assert!(
            text.contains("Refunds within 30 days") && text.contains("gold"),
            "{text}"
        );
        assert!(!text.contains("123-45-6789") && !text.contains("not for readers"));
        assert!(repo.objects.iter().all(|o| o.content.is_none()), "released");
    }
}
