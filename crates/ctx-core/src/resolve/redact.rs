//! Redaction rules, compiled once, and their application to structured content.
//!
//! Paths are dotted, with `[]`/`[*]` for every array element and `[N]` for one
//! (`contacts[*].email`). A malformed path is an error when the rule is compiled,
//! never a rule that silently matches nothing. The bundle records which rule paths
//! applied, never the values.
//!
//! `mode: hash` is keyed: the replacement is `hmac-sha256:<hex>` of the value under
//! the repository's redaction key (see [`HashKey`]), so a value with little entropy
//! (a PIN, an SSN) cannot be recovered by hashing every candidate. Without the key a
//! hash rule cannot be applied, and [`redact`] refuses rather than serve the value.

use hmac::{Hmac, Mac};
use serde_json::{Map, Value};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::model::{Redaction, RedactionMode};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Each,
    Index(usize),
}

/// A compiled redaction rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The path as written (what a bundle's `redacted` list names).
    pub path: String,
    steps: Vec<Step>,
    pub mode: RedactionMode,
    replacement: Option<String>,
}

/// Parse `contacts[*].email` into steps. None when the path is malformed.
fn steps(path: &str) -> Option<Vec<Step>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if name.contains(']') {
            return None;
        }
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
                n if n.bytes().all(|b| b.is_ascii_digit()) => Step::Index(n.parse().ok()?),
                _ => return None,
            });
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return None;
            }
        }
    }
    Some(out)
}

/// What a well-formed path looks like, for diagnostics.
pub const PATH_SYNTAX: &str =
    "dotted keys with `[]`/`[*]` for every array element or `[N]` for one, e.g. `contacts[*].email`";

/// Why a declared redaction rule cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("`{0}` is not a valid redaction path ({PATH_SYNTAX})")]
    BadPath(String),
    /// Not a closed mapping of the known members (serde's reason attached).
    #[error("a redaction rule is a mapping with `path` and optional `mode` (remove, mask, hash), `replacement` and `reason` ({0})")]
    NotARule(String),
    #[error("a redaction rule's `path` cannot be empty")]
    EmptyPath,
    #[error("`redact` must be a list of rules")]
    NotAList,
}

/// Why a redaction key cannot be read or made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashKeyError {
    #[error("a redaction key file holds exactly 64 hex digits (32 bytes)")]
    Malformed,
    #[error("no randomness available: {0}")]
    NoRandomness(String),
}

impl Rule {
    /// Compile a declared rule; the error says what is wrong with its path.
    pub fn compile(r: &Redaction) -> Result<Rule, RuleError> {
        let steps = steps(&r.path).ok_or_else(|| RuleError::BadPath(r.path.clone()))?;
        Ok(Rule {
            path: r.path.clone(),
            steps,
            mode: r.mode,
            replacement: r.replacement.clone(),
        })
    }

    /// Parse and compile one rule as written in a document (a closed mapping).
    pub fn from_value(v: &Value) -> Result<Rule, RuleError> {
        let declared: Redaction =
            serde_json::from_value(v.clone()).map_err(|e| RuleError::NotARule(e.to_string()))?;
        if declared.path.is_empty() {
            return Err(RuleError::EmptyPath);
        }
        Rule::compile(&declared)
    }

    /// Compile a list of declared rules (`redact:`), stopping at the first bad one.
    pub fn list(v: &Value) -> Result<Vec<Rule>, RuleError> {
        match v {
            Value::Array(items) => items.iter().map(Rule::from_value).collect(),
            _ => Err(RuleError::NotAList),
        }
    }

    /// Would this rule redact anything in `v`? The same walk as [`redact`] without
    /// changing (or copying) `v`: a lint asks this of every object a rule covers.
    pub fn reaches(&self, v: &Value) -> bool {
        reaches(v, &self.steps)
    }

    fn mask(&self) -> Value {
        Value::String(
            self.replacement
                .clone()
                .unwrap_or_else(|| "[REDACTED]".into()),
        )
    }
}

/// Is a redaction path well-formed?
pub fn valid_path(path: &str) -> bool {
    steps(path).is_some()
}

/// The per-repository secret that keys `mode: hash`.
///
/// 32 random bytes, stored as 64 hex digits in a file inside the repository (by
/// default `.ctx/redaction.key`, or where the manifest's `extensions.ctx.redaction.hash_key`
/// points). Committing the file keeps hashed values identical in every clone and in CI;
/// it guards against the readers of a bundle, who are not readers of the repository.
pub struct HashKey(Zeroizing<Vec<u8>>);

impl std::fmt::Debug for HashKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashKey(..)")
    }
}

/// Domain separation: a value hashed for redaction can never collide with another use of the key.
const HASH_DOMAIN: &[u8] = b"ctx redact v1\0";

impl HashKey {
    /// A key from the text of a key file (64 hex digits, surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<HashKey, HashKeyError> {
        let t = text.trim();
        if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(HashKeyError::Malformed);
        }
        let bytes = hex::decode(t).map_err(|_| HashKeyError::Malformed)?;
        Ok(HashKey(Zeroizing::new(bytes)))
    }

    /// A fresh random key, as the text of a key file.
    pub fn generate() -> Result<Zeroizing<String>, HashKeyError> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        getrandom::fill(&mut bytes[..]).map_err(|e| HashKeyError::NoRandomness(e.to_string()))?;
        Ok(Zeroizing::new(format!("{}\n", hex::encode(&bytes[..]))))
    }

    fn hash(&self, v: &Value) -> Value {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(HASH_DOMAIN);
        match v {
            Value::String(s) => mac.update(s.as_bytes()),
            other => mac.update(&crate::jcs::to_vec(other)),
        }
        Value::String(format!(
            "hmac-sha256:{}",
            hex::encode(mac.finalize().into_bytes())
        ))
    }
}

/// Why redaction could not be applied (the content must then be withheld).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedactError {
    #[error("the redaction rule `{0}` hashes values and needs the repository's redaction key")]
    NoKey(String),
}

/// Apply one rule below `v`. Returns whether anything was redacted.
fn apply(
    v: &mut Value,
    steps: &[Step],
    rule: &Rule,
    key: Option<&HashKey>,
) -> Result<bool, RedactError> {
    let Some((first, rest)) = steps.split_first() else {
        return Ok(false);
    };
    let last = rest.is_empty();
    let replace = |slot: &mut Value| -> Result<(), RedactError> {
        *slot = match rule.mode {
            RedactionMode::Mask => rule.mask(),
            RedactionMode::Hash => key
                .ok_or_else(|| RedactError::NoKey(rule.path.clone()))?
                .hash(slot),
            RedactionMode::Remove => unreachable!("removal never replaces"),
        };
        Ok(())
    };
    match (first, v) {
        (Step::Key(k), Value::Object(map)) => {
            if !last {
                return match map.get_mut(k) {
                    Some(child) => apply(child, rest, rule, key),
                    None => Ok(false),
                };
            }
            match rule.mode {
                RedactionMode::Remove => Ok(map.shift_remove(k).is_some()),
                _ => match map.get_mut(k) {
                    Some(slot) => replace(slot).map(|()| true),
                    None => Ok(false),
                },
            }
        }
        (Step::Each, Value::Array(items)) => {
            if last {
                if rule.mode == RedactionMode::Remove {
                    let had = !items.is_empty();
                    items.clear();
                    return Ok(had);
                }
                for item in items.iter_mut() {
                    replace(item)?;
                }
                return Ok(!items.is_empty());
            }
            let mut any = false;
            for item in items.iter_mut() {
                any |= apply(item, rest, rule, key)?;
            }
            Ok(any)
        }
        (Step::Index(i), Value::Array(items)) => {
            if *i >= items.len() {
                return Ok(false);
            }
            if !last {
                return apply(&mut items[*i], rest, rule, key);
            }
            if rule.mode == RedactionMode::Remove {
                items.remove(*i);
            } else {
                replace(&mut items[*i])?;
            }
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Whether [`apply`] would redact something below `v` (every mode redacts what
/// the path reaches; a hash rule without its key fails there, which counts too).
fn reaches(v: &Value, steps: &[Step]) -> bool {
    let Some((first, rest)) = steps.split_first() else {
        return false;
    };
    let last = rest.is_empty();
    match (first, v) {
        (Step::Key(k), Value::Object(map)) => match map.get(k) {
            Some(child) => last || reaches(child, rest),
            None => false,
        },
        (Step::Each, Value::Array(items)) if last => !items.is_empty(),
        (Step::Each, Value::Array(items)) => items.iter().any(|i| reaches(i, rest)),
        (Step::Index(i), Value::Array(items)) => match items.get(*i) {
            Some(item) => last || reaches(item, rest),
            None => false,
        },
        _ => false,
    }
}

/// Apply `rules` in order to `content`; return the rule paths that redacted something
/// (sorted, unique). On error `content` may be half redacted: the caller withholds it.
pub fn redact(
    content: &mut Value,
    rules: &[&Rule],
    key: Option<&HashKey>,
) -> Result<Vec<String>, RedactError> {
    let mut applied = Vec::new();
    for rule in rules {
        if apply(content, &rule.steps, rule, key)? {
            applied.push(rule.path.clone());
        }
    }
    applied.sort();
    applied.dedup();
    Ok(applied)
}

/// Apply `rules` to a mapping (the front matter of a Markdown document).
pub fn redact_map(
    map: &mut Map<String, Value>,
    rules: &[&Rule],
    key: Option<&HashKey>,
) -> Result<Vec<String>, RedactError> {
    let mut v = Value::Object(std::mem::take(map));
    let r = redact(&mut v, rules, key);
    if let Value::Object(m) = v {
        *map = m;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(path: &str, mode: RedactionMode) -> Rule {
        Rule::compile(&Redaction {
            path: path.into(),
            mode,
            replacement: None,
            reason: None,
        })
        .unwrap()
    }

    fn key() -> HashKey {
        HashKey::parse(&"ab".repeat(32)).unwrap()
    }

    #[test]
    fn remove_mask_hash() {
        let mut v = json!({"ssn": "000", "contacts": [{"email": "a@x"}, {"email": "b@x"}], "card": {"pan": "4111"}});
        let r1 = rule("ssn", RedactionMode::Remove);
        let r2 = rule("contacts[*].email", RedactionMode::Mask);
        let r3 = rule("card.pan", RedactionMode::Hash);
        let r4 = rule("missing.path", RedactionMode::Remove);
        let applied = redact(&mut v, &[&r1, &r2, &r3, &r4], Some(&key())).unwrap();
        assert_eq!(applied, vec!["card.pan", "contacts[*].email", "ssn"]);
        assert!(v.get("ssn").is_none());
        assert_eq!(v["contacts"][1]["email"], "[REDACTED]");
        assert!(v["card"]["pan"]
            .as_str()
            .unwrap()
            .starts_with("hmac-sha256:"));
        assert!(!v.to_string().contains("4111"));
    }

    /// `reaches` answers exactly what applying the rule would (hash without a key:
    /// the failure counts as reaching), for every mode and shape.
    #[test]
    fn reaches_agrees_with_applying() {
        let docs = [
            json!({"ssn": "000", "contacts": [{"email": "a@x"}, {"name": "b"}], "card": {"pan": "4111"}, "list": []}),
            json!({"contacts": [], "card": "flat", "list": [1, 2]}),
            json!({"contacts": [{"name": "b"}], "ssn": null}),
            json!(["top", "level"]),
            json!("prose"),
        ];
        let paths = [
            "ssn",
            "contacts[*].email",
            "contacts[*]",
            "contacts[1].name",
            "contacts[0].email",
            "card.pan",
            "card",
            "list[]",
            "list[5]",
            "list[0]",
            "missing.deep.path",
            "[*]",
            "[2]",
        ];
        for doc in &docs {
            for path in paths {
                for mode in [
                    RedactionMode::Remove,
                    RedactionMode::Mask,
                    RedactionMode::Hash,
                ] {
                    let r = rule(path, mode);
                    let mut copy = doc.clone();
                    let applied = !matches!(redact(&mut copy, &[&r], None), Ok(a) if a.is_empty());
                    assert_eq!(r.reaches(doc), applied, "{path} {mode:?} on {doc}");
                }
            }
        }
    }

    #[test]
    fn hashing_is_keyed_and_deterministic() {
        let r = rule("pin", RedactionMode::Hash);
        let run = |k: &HashKey| {
            let mut v = json!({"pin": "1234"});
            redact(&mut v, &[&r], Some(k)).unwrap();
            v["pin"].as_str().unwrap().to_string()
        };
        let other = HashKey::parse(&"cd".repeat(32)).unwrap();
        assert_eq!(run(&key()), run(&key()));
        assert_ne!(run(&key()), run(&other));
        // Not the unsalted digest of the value.
        use sha2::Digest;
        let plain = hex::encode(sha2::Sha256::digest(b"1234"));
        assert!(!run(&key()).contains(&plain));
    }

    #[test]
    fn a_hash_rule_without_a_key_refuses() {
        let r = rule("pin", RedactionMode::Hash);
        let mut v = json!({"pin": "1234"});
        assert!(matches!(
            redact(&mut v, &[&r], None),
            Err(RedactError::NoKey(_))
        ));
        // A hash rule that matches nothing needs no key.
        let mut w = json!({"other": 1});
        assert_eq!(redact(&mut w, &[&r], None).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn index_and_bad_paths() {
        let mut v = json!({"a": [{"b": 1}, {"b": 2}]});
        let applied = redact(&mut v, &[&rule("a[1].b", RedactionMode::Remove)], None).unwrap();
        assert_eq!(applied, vec!["a[1].b"]);
        assert_eq!(v, json!({"a": [{"b": 1}, {}]}));
        for bad in [
            "a..b", "a[x]", "ssn[", "a]", "a[1", "a[-1]", "a[1]b", "", ".",
        ] {
            assert!(!valid_path(bad), "{bad}");
        }
        for good in ["a[]", "a[*]", "a[0][1]", "a.b[2].c", "[*].ssn"] {
            assert!(valid_path(good), "{good}");
        }
    }

    #[test]
    fn declared_rules_are_closed_mappings() {
        assert!(Rule::from_value(&json!({"path": "a", "mode": "hash"})).is_ok());
        assert!(Rule::from_value(&json!({"path": "a", "mode": "shred"})).is_err());
        assert!(Rule::from_value(&json!({"path": "a", "paths": "b"})).is_err());
        assert!(Rule::from_value(&json!({"path": "ssn["})).is_err());
        assert!(Rule::from_value(&json!("ssn")).is_err());
        assert!(Rule::list(&json!({"path": "a"})).is_err());
    }
}
