//! Did-you-mean: the closest existing name to a misspelt one.

/// The candidate closest to `word` by edit distance (transpositions count once), if
/// it is close enough to be a likely typo: at most a third of the word's length
/// (and at least 2) edits away. Ties go to the alphabetically first candidate, so
/// the suggestion does not depend on iteration order.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= limit && *d < c.chars().count().max(word.chars().count()))
        .min()
        .map(|(_, c)| c)
}

/// `did you mean `x`? ` or nothing.
pub fn did_you_mean(hint: Option<&str>) -> String {
    match hint {
        Some(h) => format!("did you mean `{h}`? "),
        None => String::new(),
    }
}

/// The top-level fields a schema defines (error path only: parses the schema text).
pub fn schema_fields(kind: crate::schema::Kind) -> Vec<String> {
    serde_json::from_str::<serde_json::Value>(kind.text())
        .ok()
        .and_then(|s| s.get("properties").and_then(|p| p.as_object()).cloned())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_only() {
        assert_eq!(closest("ownr", ["owner", "type", "title"]), Some("owner"));
        assert_eq!(
            closest("policy.internal.*", ["policies.internal.*", "customers.*"]),
            Some("policies.internal.*")
        );
        assert_eq!(closest("zzz", ["owner", "type"]), None);
        assert_eq!(closest("ab", ["ba", "ab"]), Some("ba"));
    }
}
