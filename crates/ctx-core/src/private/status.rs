//! The state of every private file: encrypted to whom, stale, plaintext by
//! mistake, invalid (the whole file is checked, see [`super::strict`]), and
//! with an identity whether it opens; plus encrypted files outside private
//! collections.

use super::format;
use super::identity::Keyring;
use super::ops;
use super::scope::{format_of, Scope};
use super::strict;

/// One file's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Encrypted to the current recipients.
    Encrypted,
    /// Encrypted to an outdated recipient list.
    Stale,
    /// A private member holding plaintext.
    Plaintext,
    /// Damaged, or holding something in clear it may not.
    Invalid,
    /// Does not open with the identity (only with `--check`).
    Unreadable,
    /// Encrypted, in a collection that is not declared private.
    Outside,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Encrypted => "encrypted",
            State::Stale => "stale",
            State::Plaintext => "plaintext",
            State::Invalid => "invalid",
            State::Unreadable => "unreadable",
            State::Outside => "outside",
        }
    }

    /// States that make `private status` fail.
    pub fn is_problem(self) -> bool {
        matches!(self, State::Plaintext | State::Invalid | State::Unreadable)
    }
}

/// One file of the report. `detail` never contains plaintext.
#[derive(Debug, Clone)]
pub struct Row {
    pub file: String,
    /// The private collection, or `None` for an encrypted file outside them.
    pub collection: Option<String>,
    pub state: State,
    pub detail: String,
    pub recipients: Vec<String>,
}

/// Every private (or encrypted) member, in file order.
pub fn rows(scope: &Scope, ring: Option<&Keyring>) -> Vec<Row> {
    let mut rows = Vec::new();
    for member in &scope.members {
        let keys = scope.keys_of(member);
        let Ok(format) = format_of(&member.rel) else {
            continue;
        };
        let collection = keys.map(|k| k.name.clone());
        let row = |state, detail: String, recipients| Row {
            file: member.rel.to_string(),
            collection: collection.clone(),
            state,
            detail,
            recipients,
        };
        let text = match std::fs::read_to_string(&member.abs) {
            Ok(t) => t,
            Err(e) if keys.is_some() => {
                rows.push(row(State::Invalid, format!("cannot read: {e}"), Vec::new()));
                continue;
            }
            Err(_) => continue,
        };
        if keys.is_none() && !text.contains(format::BEGIN) {
            continue; // an ordinary clear member
        }
        let sealed = match format::parse_sealed(format, &text) {
            Ok(Some(s)) => s,
            Ok(None) if keys.is_some() => {
                let fix = format!("run `ctx private encrypt {}`", member.rel);
                rows.push(row(State::Plaintext, fix, Vec::new()));
                continue;
            }
            Ok(None) => continue,
            Err(e) => {
                rows.push(row(State::Invalid, e.to_string(), Vec::new()));
                continue;
            }
        };
        let (mut state, mut detail) = match keys {
            None => (
                State::Outside,
                "encrypted, but its collection is not declared private".to_string(),
            ),
            Some(k) => {
                let unlisted = strict::unlisted_clear_fields(&sealed.header, &k.clear);
                let want = k.keys();
                if !unlisted.is_empty() {
                    (
                        State::Invalid,
                        format!(
                            "field(s) {} stored in clear but not in the collection's `clear:` list: run `ctx private rekey --force`",
                            unlisted.join(", ")
                        ),
                    )
                } else if sealed.recipients == want {
                    (State::Encrypted, "current".to_string())
                } else {
                    let added = want
                        .iter()
                        .filter(|x| !sealed.recipients.contains(x))
                        .count();
                    let removed = sealed
                        .recipients
                        .iter()
                        .filter(|x| !want.contains(x))
                        .count();
                    (
                        State::Stale,
                        format!("recipients differ (+{added} −{removed}): run `ctx private rekey`"),
                    )
                }
            }
        };
        if let Some(ring) = ring.filter(|_| state != State::Invalid) {
            match ops::decrypt(&member.rel, &sealed.armor, Some(ring)) {
                Ok((plain, key)) => {
                    let bad = format::parse_plain(format, &plain)
                        .map(|d| ops::mismatched(&sealed.header, &d.fields))
                        .unwrap_or_else(|e| vec![format!("unparseable plaintext: {e}")]);
                    if bad.is_empty() {
                        detail.push_str(&format!("; opens with {key}"));
                    } else {
                        state = State::Invalid;
                        detail = format!(
                            "clear metadata does not match the encrypted copy: {}",
                            bad.join(", ")
                        );
                    }
                }
                Err(e) => {
                    state = State::Unreadable;
                    detail = e.to_string();
                }
            }
        }
        rows.push(row(state, detail, sealed.recipients));
    }
    rows
}
