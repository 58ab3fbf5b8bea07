//! Scope patterns over dotted ids. Wildcards match whole segments only:
//! a trailing `*` covers a subtree, an interior `*` exactly one segment.

/// A compiled scope pattern such as `policies.*`, `customers.*.churn-risk` or `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Any,
}

/// Why a pattern text is not a valid scope pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    pub pattern: String,
    pub reason: &'static str,
}

fn valid_segment(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// Is `ns` a namespace id (`^[a-z0-9][a-z0-9-]*$`): a repository's `id`, an
/// audit event's namespace?
pub fn valid_namespace(ns: &str) -> bool {
    let mut c = ns.chars();
    matches!(c.next(), Some(x) if x.is_ascii_lowercase() || x.is_ascii_digit())
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '-')
}

/// Is `id` a well-formed object id: dotted segments of lowercase letters, digits,
/// `-` and `_`, each starting with a letter or digit?
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 512 && id.split('.').all(valid_segment)
}

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, PatternError> {
        let err = |reason| PatternError {
            pattern: text.to_string(),
            reason,
        };
        if text.is_empty() {
            return Err(err("a pattern cannot be empty"));
        }
        let mut segments = Vec::new();
        for seg in text.split('.') {
            if seg == "*" {
                segments.push(Segment::Any);
            } else if seg.contains('*') {
                return Err(err(
                    "a wildcard must be a whole segment (`policies.*`), never part of one (`policies.ref*`)",
                ));
            } else if seg.is_empty() {
                return Err(err(
                    "empty segment (two dots in a row, or a leading/trailing dot)",
                ));
            } else if !valid_segment(seg) {
                return Err(err(
                    "segments are lowercase letters, digits, `-` and `_`, starting with a letter or digit",
                ));
            } else {
                segments.push(Segment::Literal(seg.to_string()));
            }
        }
        Ok(Pattern {
            text: text.to_string(),
            segments,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The literal segments before the first wildcard, dotted (`customers` for
    /// `customers.*.churn-risk`, the whole text when there is no wildcard); None when
    /// the pattern starts with one. Every id it covers is this prefix or lies under it.
    pub fn literal_prefix(&self) -> Option<String> {
        let literals: Vec<&str> = self
            .segments
            .iter()
            .map_while(|s| match s {
                Segment::Literal(l) => Some(l.as_str()),
                Segment::Any => None,
            })
            .collect();
        (!literals.is_empty()).then(|| literals.join("."))
    }

    /// Does this pattern cover the dotted `id`?
    ///
    /// `products.*` covers `products`, `products.a` and `products.a.b`;
    /// `customers.*.churn-risk` covers `customers.acme.churn-risk` only.
    pub fn covers(&self, id: &str) -> bool {
        let mut parts = id.split('.');
        let n = self.segments.len();
        for (i, seg) in self.segments.iter().enumerate() {
            match (seg, parts.next()) {
                // A trailing wildcard is a subtree, parent included.
                (Segment::Any, _) if i + 1 == n => return true,
                (Segment::Any, Some(_)) => {}
                (Segment::Literal(l), Some(p)) if l == p => {}
                _ => return false,
            }
        }
        parts.next().is_none()
    }
}

/// Match an object's `permissions` principal list entry against a consumer name.
/// Exact, `*` for everyone, or a trailing `.*` wildcard.
pub fn principal_matches(entry: &str, name: &str) -> bool {
    if entry == "*" || entry == name {
        return true;
    }
    if let Some(prefix) = entry.strip_suffix(".*") {
        return name == prefix
            || (name.len() > prefix.len()
                && name.starts_with(prefix)
                && name.as_bytes()[prefix.len()] == b'.');
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, id: &str) -> bool {
        Pattern::parse(p).unwrap().covers(id)
    }

    #[test]
    fn literal_prefix_is_what_every_covered_id_starts_with() {
        let prefix = |p: &str| Pattern::parse(p).unwrap().literal_prefix();
        assert_eq!(
            prefix("customers.*.churn-risk").as_deref(),
            Some("customers")
        );
        assert_eq!(
            prefix("policies.internal.*").as_deref(),
            Some("policies.internal")
        );
        assert_eq!(prefix("mission").as_deref(), Some("mission"));
        assert_eq!(prefix("*"), None);
        assert_eq!(prefix("*.faq"), None);
    }

    #[test]
    fn whole_segment_matching() {
        assert!(m("*", "anything.at.all"));
        assert!(m("mission", "mission"));
        assert!(!m("mission", "mission.statement"));
        assert!(m("products.*", "products"));
        assert!(m("products.*", "products.enterprise"));
        assert!(m("products.*", "products.enterprise.pricing"));
        assert!(!m("products.*", "products-internal"));
        assert!(!m("products.*", "productsx.a"));
        assert!(m("customers.*.churn-risk", "customers.acme.churn-risk"));
        assert!(!m("customers.*.churn-risk", "customers.acme.eu.churn-risk"));
        assert!(!m("customers.*.churn-risk", "customers.acme"));
        assert!(m("a.*.c.*", "a.b.c.d.e"));
    }

    #[test]
    fn partial_segment_wildcards_are_rejected() {
        assert!(Pattern::parse("policies.ref*").is_err());
        assert!(Pattern::parse("Policies.*").is_err());
        assert!(Pattern::parse("a..b").is_err());
        assert!(Pattern::parse("").is_err());
    }

    #[test]
    fn principals() {
        assert!(principal_matches("*", "support"));
        assert!(principal_matches("finance", "finance"));
        assert!(!principal_matches("finance", "finance-lead"));
        assert!(principal_matches("team.*", "team.a"));
        assert!(!principal_matches("team.*", "teams"));
    }
}
