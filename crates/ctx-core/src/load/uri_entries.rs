//! `context:` entries and `collections:` that name a URI (`https://…`,
//! `git://…`, `crm://…`) instead of a path in the repository (spec §7.1, §7.3).
//!
//! Each becomes one object whose id is the entry's (or collection's) key and
//! whose content is that URI, with the collection's and manifest's defaults.
//! Nothing is fetched while loading: the URI is the object's `content_uri`, so
//! its content is read only when a resolution has authorized and selected it,
//! through the same adapters and under the same enablement rules as any other
//! `content_uri`; validate reports a scheme no adapter claims (`unknown-scheme`)
//! at the manifest line that names it. The fetched bytes are the object's
//! content, never its metadata: what a remote source says cannot change the
//! object's authority, classification or scope.

use serde_json::{json, Map, Value};

use crate::adapters;
use crate::manifest::Manifest;
use crate::object::Format;
use crate::schema::PathItem;

use super::parse::{self, Defaults, Parsed};
use super::walk::{Member, MemberSource};

/// The URI a manifest target names, when it is one (a `file://` target, or a
/// plain path, is a file in the repository and is loaded by the walker).
fn uri_target(target: &str) -> Option<&str> {
    match adapters::scheme(target) {
        Some(s) if !s.eq_ignore_ascii_case("file") => Some(target),
        _ => None,
    }
}

/// One object per URI entry and URI collection, in manifest order.
pub fn parsed(m: &Manifest) -> Vec<Parsed> {
    let mut out = Vec::new();
    for e in &m.entries {
        if let Some(uri) = uri_target(&e.target) {
            let path = [
                PathItem::Key("context".into()),
                PathItem::Key(e.key.clone()),
            ];
            out.push(object(m, &e.key, uri, None, &path));
        }
    }
    for c in &m.collections {
        if let Some(uri) = uri_target(&c.source) {
            let path = [
                PathItem::Key("collections".into()),
                PathItem::Key(c.name.clone()),
                PathItem::Key("source".into()),
            ];
            out.push(object(m, &c.name, uri, Some(&c.defaults), &path));
        }
    }
    out
}

/// Parse the object a URI entry stands for, positioned at its manifest line.
fn object(
    m: &Manifest,
    key: &str,
    uri: &str,
    collection: Option<&Map<String, Value>>,
    path: &[PathItem],
) -> Parsed {
    let defaults = Defaults {
        collection,
        manifest: &m.defaults,
    };
    let mut doc = json!({
        "content_uri": uri,
        // The author named this URI as where the content comes from.
        "sources": [{ "uri": uri }],
    });
    let typed =
        collection.is_some_and(|c| c.contains_key("type")) || m.defaults.contains_key("type");
    if !typed {
        // Like a Markdown file without front matter: a document.
        doc["type"] = json!("document");
    }
    let member = Member {
        // Parsed as JSON, then re-attributed to the manifest below.
        rel: crate::fs::RelPath::parse("uri-entry.json").expect("a plain relative path"),
        abs: m.path.clone(),
        source: MemberSource::Entry {
            key: key.to_string(),
        },
    };
    let text = serde_json::to_vec(&doc).expect("JSON values serialize");
    let mut p = parse::parse(&member, &text, &defaults);
    let line = m.locate(path).map_or(1, |(l, _)| l);
    if let Some(o) = &mut p.object {
        o.origin.file = m.file.clone();
        o.origin.format = Format::from_path(&m.file).unwrap_or(Format::Yaml);
        o.origin.line = line;
    }
    for d in &mut p.diags {
        d.file = Some(m.file.clone());
        d.line = Some(line);
        d.column = None;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(text: &str) -> (tempfile::TempDir, Manifest) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencontext.yaml");
        std::fs::write(&path, text).unwrap();
        let (m, _) = Manifest::load(&path).unwrap();
        (dir, m)
    }

    #[test]
    fn uri_entries_and_collections_become_objects_at_their_manifest_line() {
        let (_d, m) = manifest(
            "opencontext: \"1.0\"\nid: acme\ncontext:\n  mission: ./mission.md\n  crm_accounts: crm://acme/accounts\ncollections:\n  remote:\n    source: https://example.com/handbook.md\n    type: handbook\n    owner: ops\n  local: ./context/**\n",
        );
        let got = parsed(&m);
        assert_eq!(got.len(), 2);
        let crm = got[0].object.as_ref().unwrap();
        assert_eq!(crm.id, "crm_accounts");
        assert_eq!(crm.meta.content_uri.as_deref(), Some("crm://acme/accounts"));
        assert_eq!(crm.origin.file, "opencontext.yaml");
        assert_eq!(crm.origin.line, 5);
        assert_eq!(crm.field("type"), Some(json!("document")));
        let remote = got[1].object.as_ref().unwrap();
        assert_eq!(remote.id, "remote");
        assert_eq!(remote.origin.line, 8);
        assert_eq!(remote.field("type"), Some(json!("handbook")));
        assert_eq!(remote.field("owner"), Some(json!("ops")));
        assert_eq!(remote.origin.collection.as_deref(), Some("remote"));
    }

    #[test]
    fn file_uris_and_paths_are_left_to_the_walker() {
        assert_eq!(uri_target("./a.md"), None);
        assert_eq!(uri_target("file://a.md"), None);
        assert_eq!(uri_target("context/**"), None);
        assert_eq!(uri_target("git://HEAD/a.md"), Some("git://HEAD/a.md"));
    }
}
