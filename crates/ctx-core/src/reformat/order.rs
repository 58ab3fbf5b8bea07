//! The canonical order of an object's top-level keys.
//!
//! Identity first (what the object is), then governance (who may see it and how
//! far it counts as truth), lifecycle (when it holds), provenance (where it came
//! from), then relations and descriptive fields. Keys ctx does not know keep
//! their relative order after those; `extensions` and `content` always come last,
//! so the data a reader skims sits above the bulk.

/// Known keys in canonical order, grouped as documented in docs/objects.md.
pub const CANONICAL_ORDER: &[(&str, &[&str])] = &[
    (
        "identity",
        &[
            "id", "type", "version", "layer", "title", "summary", "language",
        ],
    ),
    (
        "governance",
        &[
            "authority",
            "owner",
            "status",
            "classification",
            "trust",
            "durability",
            "permissions",
            "redact",
            "approval",
        ],
    ),
    (
        "lifecycle",
        &[
            "created",
            "updated",
            "valid_from",
            "expires",
            "ttl",
            "review",
            "supersedes",
            "superseded_by",
        ],
    ),
    ("provenance", &["canonical_source", "sources", "confidence"]),
    (
        "relations and description",
        &[
            "references",
            "depends_on",
            "conflicts_with",
            "applies_to",
            "tags",
            "content_type",
            "content_uri",
        ],
    ),
];

/// Keys that close the document, in this order, after any unknown key.
const LAST: [&str; 2] = ["extensions", "content"];

/// Sort rank of a key: known keys by table position, unknown keys after them
/// (the caller's stable sort keeps their written order), then [`LAST`].
pub fn rank(key: &str) -> usize {
    let mut n = 0;
    for (_, keys) in CANONICAL_ORDER {
        if let Some(i) = keys.iter().position(|k| *k == key) {
            return n + i;
        }
        n += keys.len();
    }
    match LAST.iter().position(|k| *k == key) {
        Some(i) => n + 1 + i,
        None => n,
    }
}

/// The indices of `keys` in canonical order (stable for keys of equal rank).
pub fn sorted_indices<S: AsRef<str>>(keys: &[S]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_by_key(|&i| rank(keys[i].as_ref()));
    idx
}

/// `map` with its keys in canonical order (values untouched).
pub fn canonical(
    map: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    let keys: Vec<&String> = map.keys().collect();
    sorted_indices(&keys)
        .into_iter()
        .map(|i| (keys[i].clone(), map[keys[i].as_str()].clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_then_unknown_then_extensions_and_content() {
        let keys = [
            "content",
            "x-note",
            "tags",
            "sources",
            "updated",
            "extensions",
            "owner",
            "id",
            "a-custom",
            "type",
        ];
        let order: Vec<&str> = sorted_indices(&keys).into_iter().map(|i| keys[i]).collect();
        assert_eq!(
            order,
            [
                "id",
                "type",
                "owner",
                "updated",
                "sources",
                "tags",
                "x-note",
                "a-custom",
                "extensions",
                "content"
            ]
        );
    }

    #[test]
    fn every_schema_field_has_a_place() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../../schemas/object.schema.json")).unwrap();
        let known = CANONICAL_ORDER.iter().flat_map(|(_, k)| k.iter()).count();
        for key in schema["properties"].as_object().unwrap().keys() {
            let r = rank(key);
            assert!(
                r < known || LAST.contains(&key.as_str()),
                "`{key}` has no canonical position"
            );
        }
    }
}
