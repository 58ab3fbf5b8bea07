//! The boxed rare fields of [`Meta`].

use super::*;

fn meta(json: &str) -> Meta {
    Meta::from_fields(&serde_json::from_str(json).unwrap())
}

#[test]
fn rare_fields_are_boxed_only_when_set_and_read_the_same() {
    let plain = meta(r#"{"id": "a", "type": "note", "tags": ["x"]}"#);
    assert!(plain.rare.is_none());
    assert!(plain.supersedes.is_empty() && plain.read.is_none() && plain.sealed.is_none());
    let linked =
        meta(r#"{"id": "a", "type": "note", "supersedes": ["b"], "permissions": {"deny": ["r"]}}"#);
    assert!(linked.rare.is_some());
    assert_eq!(linked.supersedes.len(), 1);
    assert_eq!(linked.deny, ["r"]);
    let mut set = plain.clone();
    set.rare_mut().default_refused = Some(Authority::Canonical);
    assert_eq!(set.default_refused, Some(Authority::Canonical));
    // The cache's encoding carries the box and its absence.
    for m in [plain, linked, set] {
        let back: Meta = postcard::from_bytes(&postcard::to_allocvec(&m).unwrap()).unwrap();
        assert_eq!(format!("{back:?}"), format!("{m:?}"));
    }
}
