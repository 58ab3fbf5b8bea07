//! The parts of reading `ctx.exchange`: where a member is ([`Place`]), what is
//! wrong with it ([`Issue`]), and the readers of one member's shape, each of
//! which records an issue and carries on with a default.

use serde_json::{Map, Value};

use super::EXTENSION;
use crate::exchange::error::ClError;

/// One step of a path under `extensions.ctx.exchange`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A member of the policy, e.g. `requesters.bot.purpose_codes[1]`; displayed
/// with its `extensions.ctx.exchange` prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place(Vec<Seg>);

impl Place {
    pub(crate) fn key(&self, k: &str) -> Place {
        let mut p = self.0.clone();
        p.push(Seg::Key(k.to_string()));
        Place(p)
    }

    pub(crate) fn index(&self, i: usize) -> Place {
        let mut p = self.0.clone();
        p.push(Seg::Index(i));
        Place(p)
    }

    pub fn segments(&self) -> &[Seg] {
        &self.0
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "extensions.{EXTENSION}")?;
        for s in &self.0 {
            match s {
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// Something wrong with the policy: where, what, and what belongs there.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub place: Place,
    /// What is wrong: the text the exchange refuses the policy with.
    pub message: String,
    /// What the member must be.
    pub expected: String,
    /// What was written, when that is not the member's value (a misspelt key's name).
    pub actual: Option<Value>,
    /// A fix more specific than "write what is expected" (a did-you-mean).
    pub fix: Option<String>,
}

impl Issue {
    /// The refusal the exchange answers with while this issue stands.
    pub fn error(&self) -> ClError {
        ClError::new(
            "INVALID_EXCHANGE_POLICY",
            format!("{}: {}", self.place, self.message),
        )
    }
}

/// The issues found so far.
#[derive(Default)]
pub(super) struct Issues(pub(super) Vec<Issue>);

impl Issues {
    pub(super) fn bad(
        &mut self,
        place: &Place,
        message: impl Into<String>,
        expected: impl Into<String>,
    ) {
        self.0.push(Issue {
            place: place.clone(),
            message: message.into(),
            expected: expected.into(),
            actual: None,
            fix: None,
        });
    }

    /// A name that is not one of `known` (a member, an agent): did-you-mean attached.
    pub(super) fn unknown<'a>(
        &mut self,
        place: Place,
        name: &str,
        message: String,
        expected: String,
        known: impl IntoIterator<Item = &'a str>,
    ) {
        let fix =
            crate::lint::suggest::closest(name, known).map(|h| format!("did you mean `{h}`?"));
        self.0.push(Issue {
            place,
            message,
            expected,
            actual: Some(Value::from(name)),
            fix,
        });
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

pub(super) fn obj<'a>(v: &'a Value, at: &Place, is: &mut Issues) -> Option<&'a Map<String, Value>> {
    let m = v.as_object();
    if m.is_none() {
        is.bad(at, "expected a mapping", "a mapping");
    }
    m
}

pub(super) fn known(m: &Map<String, Value>, at: &Place, keys: &[&str], is: &mut Issues) {
    for k in m.keys().filter(|k| !keys.contains(&k.as_str())) {
        is.unknown(
            at.key(k),
            k,
            format!("unknown member (expected one of: {})", keys.join(", ")),
            format!("one of: {}", keys.join(", ")),
            keys.iter().copied(),
        );
    }
}

/// A list of non-empty strings, repeats dropped; None when absent or not a list.
pub(super) fn strings(
    m: &Map<String, Value>,
    at: &Place,
    key: &str,
    is: &mut Issues,
) -> Option<Vec<String>> {
    let v = m.get(key)?;
    let at = at.key(key);
    let Some(a) = v.as_array() else {
        is.bad(&at, "expected a list of strings", "a list of strings");
        return None;
    };
    let mut out: Vec<String> = Vec::new();
    for (i, x) in a.iter().enumerate() {
        match x.as_str() {
            Some(s) if !s.is_empty() => {
                if !out.iter().any(|o| o == s) {
                    out.push(s.to_string())
                }
            }
            _ => is.bad(
                &at.index(i),
                "expected a non-empty string",
                "a non-empty string",
            ),
        }
    }
    Some(out)
}

pub(super) fn uint(
    m: &Map<String, Value>,
    at: &Place,
    key: &str,
    default: u64,
    max: u64,
    is: &mut Issues,
) -> u64 {
    match m.get(key) {
        None => default,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 && n <= max => n,
            _ => {
                let want = format!("a whole number from 1 to {max}");
                is.bad(&at.key(key), format!("expected {want}"), want);
                default
            }
        },
    }
}

pub(super) fn flag(
    m: &Map<String, Value>,
    at: &Place,
    key: &str,
    default: bool,
    is: &mut Issues,
) -> bool {
    match m.get(key) {
        None => default,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            is.bad(&at.key(key), "expected true or false", "true or false");
            default
        }
    }
}
