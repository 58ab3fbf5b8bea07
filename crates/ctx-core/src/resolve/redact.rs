//! Stage 8 — redaction on structured content, after authorization and before
//! compilation. Paths are dotted, with `[]`/`[*]` for every array element and
//! `[N]` for one. The bundle records which rule paths applied, never the values.

use serde_json::Value;

use crate::model::{Redaction, RedactionMode};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Each,
    Index(usize),
}

/// Parse `contacts[*].email` into steps. None when the path is malformed.
fn steps(path: &str) -> Option<Vec<Step>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            out.push(Step::Key(name.to_string()));
        } else if rest.is_empty() {
            return None;
        }
        while !rest.is_empty() {
            let close = rest.find(']')?;
            let inner = &rest[1..close];
            out.push(match inner {
                "" | "*" => Step::Each,
                n => Step::Index(n.parse().ok()?),
            });
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return None;
            }
        }
    }
    Some(out)
}

fn hash(v: &Value) -> Value {
    let bytes = match v {
        Value::String(s) => s.as_bytes().to_vec(),
        other => crate::jcs::to_vec(other),
    };
    Value::String(crate::canonical::digest(&bytes))
}

/// Apply one rule at `steps` below `v`. Returns whether anything was redacted.
fn apply(v: &mut Value, steps: &[Step], rule: &Redaction) -> bool {
    let Some((first, rest)) = steps.split_first() else {
        return false;
    };
    let last = rest.is_empty();
    match (first, v) {
        (Step::Key(k), Value::Object(map)) => {
            if last {
                match rule.mode {
                    RedactionMode::Remove => map.shift_remove(k).is_some(),
                    RedactionMode::Mask => match map.get_mut(k) {
                        Some(slot) => {
                            *slot = Value::String(
                                rule.replacement
                                    .clone()
                                    .unwrap_or_else(|| "[REDACTED]".into()),
                            );
                            true
                        }
                        None => false,
                    },
                    RedactionMode::Hash => match map.get_mut(k) {
                        Some(slot) => {
                            *slot = hash(slot);
                            true
                        }
                        None => false,
                    },
                }
            } else {
                map.get_mut(k).is_some_and(|child| apply(child, rest, rule))
            }
        }
        (Step::Each, Value::Array(items)) => {
            if last {
                match rule.mode {
                    RedactionMode::Remove => {
                        let had = !items.is_empty();
                        items.clear();
                        had
                    }
                    _ => {
                        let mut any = false;
                        for item in items.iter_mut() {
                            *item = if rule.mode == RedactionMode::Mask {
                                Value::String(
                                    rule.replacement
                                        .clone()
                                        .unwrap_or_else(|| "[REDACTED]".into()),
                                )
                            } else {
                                hash(item)
                            };
                            any = true;
                        }
                        any
                    }
                }
            } else {
                let mut any = false;
                for item in items.iter_mut() {
                    any |= apply(item, rest, rule);
                }
                any
            }
        }
        (Step::Index(i), Value::Array(items)) => {
            if *i >= items.len() {
                return false;
            }
            if last {
                match rule.mode {
                    RedactionMode::Remove => {
                        items.remove(*i);
                    }
                    RedactionMode::Mask => {
                        items[*i] = Value::String(
                            rule.replacement
                                .clone()
                                .unwrap_or_else(|| "[REDACTED]".into()),
                        )
                    }
                    RedactionMode::Hash => items[*i] = hash(&items[*i]),
                }
                true
            } else {
                apply(&mut items[*i], rest, rule)
            }
        }
        _ => false,
    }
}

/// Apply `rules` in order to `content`; return the rule paths that redacted something
/// (sorted, unique).
pub fn redact(content: &mut Value, rules: &[&Redaction]) -> Vec<String> {
    let mut applied = Vec::new();
    for rule in rules {
        if let Some(s) = steps(&rule.path) {
            if apply(content, &s, rule) {
                applied.push(rule.path.clone());
            }
        }
    }
    applied.sort();
    applied.dedup();
    applied
}

/// Is a redaction path well-formed?
pub fn valid_path(path: &str) -> bool {
    steps(path).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(path: &str, mode: RedactionMode) -> Redaction {
        Redaction {
            path: path.into(),
            mode,
            replacement: None,
            reason: None,
        }
    }

    #[test]
    fn remove_mask_hash() {
        let mut v = json!({"ssn": "000", "contacts": [{"email": "a@x"}, {"email": "b@x"}], "card": {"pan": "4111"}});
        let r1 = rule("ssn", RedactionMode::Remove);
        let r2 = rule("contacts[*].email", RedactionMode::Mask);
        let r3 = rule("card.pan", RedactionMode::Hash);
        let r4 = rule("missing.path", RedactionMode::Remove);
        let applied = redact(&mut v, &[&r1, &r2, &r3, &r4]);
        assert_eq!(applied, vec!["card.pan", "contacts[*].email", "ssn"]);
        assert!(v.get("ssn").is_none());
        assert_eq!(v["contacts"][1]["email"], "[REDACTED]");
        assert!(v["card"]["pan"].as_str().unwrap().starts_with("sha256:"));
        assert!(!v.to_string().contains("4111"));
    }

    #[test]
    fn index_and_bad_paths() {
        let mut v = json!({"a": [{"b": 1}, {"b": 2}]});
        let applied = redact(&mut v, &[&rule("a[1].b", RedactionMode::Remove)]);
        assert_eq!(applied, vec!["a[1].b"]);
        assert_eq!(v, json!({"a": [{"b": 1}, {}]}));
        assert!(!valid_path("a..b"));
        assert!(!valid_path("a[x]"));
        assert!(valid_path("a[]"));
    }
}
