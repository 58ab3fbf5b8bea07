//! Whole-collection operations: encrypt plaintext members in place, and
//! rekey (re-encrypt to the manifest's current recipients). Each is a plan
//! computed in memory (new ciphertext texts, never plaintext on disk) and
//! an apply step that writes the changed files atomically.

use serde_json::{Map, Value};

use crate::error::Result;
use crate::evidence::{Record, WriteKind};
use crate::load::parse::derive_id;
use crate::load::walk::{Member, MemberSource};

use super::config::{short, CollectionKeys};
use super::format;
use super::identity::Keyring;
use super::ops;
use super::scope::{format_of, Scope};

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Encrypted now, to this many recipients.
    Encrypted { recipients: usize },
    /// Already encrypted; `stale` when to an outdated recipient list.
    AlreadyEncrypted { stale: bool },
    /// Re-encrypted to `recipients` keys; `removed` lists the short forms
    /// of keys that no longer receive it.
    Rekeyed {
        recipients: usize,
        added: usize,
        removed: Vec<String>,
    },
    /// Already encrypted to the current recipients.
    Current,
    /// A private member that holds plaintext (rekey cannot touch it).
    Plaintext,
    /// Could not be handled; the message never contains plaintext.
    Failed(String),
}

/// One file's planned change.
#[derive(Debug, Clone)]
pub struct Change {
    /// Path relative to the repository.
    pub file: String,
    /// The object id (for the audit trail) and whether it is a decision.
    pub id: String,
    pub decision: bool,
    pub outcome: Outcome,
    /// The new file text (ciphertext and clear header), when it changes.
    pub text: Option<String>,
    /// The digest of the file as planned from: it is replaced only while it
    /// still holds those bytes.
    pub planned_from: String,
}

/// A plan over many files; nothing is written until [`Plan::apply`].
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub changes: Vec<Change>,
}

impl Plan {
    /// Files whose outcome matches `pred`.
    pub fn count(&self, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.changes.iter().filter(|c| pred(&c.outcome)).count()
    }

    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Failed(_) | Outcome::Plaintext))
    }

    /// `(id, is_decision)` of the files this plan rewrites (for the recorder).
    pub fn written(&self) -> Vec<(String, bool)> {
        self.changes
            .iter()
            .filter(|c| c.text.is_some())
            .map(|c| (c.id.clone(), c.decision))
            .collect()
    }

    /// Write every changed file and record the rewritten objects as writes
    /// when the manifest's `audit` block asks (`context_writes`; the log is
    /// checked before any write), as one transaction: a kill leaves every
    /// file as it was, or a journal the next writer completes. Nothing is
    /// replaced that changed since it was planned. Takes the repository lock
    /// unless the scope holds it ([`Scope::load_for_write`]).
    pub fn apply(&self, scope: &Scope) -> Result<()> {
        let _lock = match scope.holds_lock() {
            true => None,
            false => Some(
                crate::fs::RepoLock::acquire(&scope.m.root)
                    .map_err(|e| crate::error::Error::io(&scope.m.root, &e))?,
            ),
        };
        let written = Record::write(None, &[], WriteKind::Reencrypt, self.written());
        crate::evidence::record_transaction(&scope.m, Some(written), |txn| {
            for c in &self.changes {
                if let Some(text) = &c.text {
                    let path = scope.m.root.join(&c.file);
                    txn.replace_digest(
                        &path,
                        &c.planned_from,
                        text.as_bytes(),
                        crate::fs::Mode::Preserve,
                    )
                    .map_err(|e| crate::evidence::record::txn_error(&scope.m.root, e))?;
                }
            }
            Ok(())
        })
    }
}

/// The id a member's object has (its `id` field, else the derived one).
fn object_id(member: &Member, fields: &Map<String, Value>) -> (String, bool) {
    let id = fields
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| match &member.source {
            MemberSource::Collection { name, base } => derive_id(name, base, &member.rel),
            MemberSource::Entry { key } => key.clone(),
        });
    let decision = fields.get("type").and_then(Value::as_str) == Some("decision");
    (id, decision)
}

fn change(
    member: &Member,
    planned_from: &str,
    ids: (String, bool),
    outcome: Outcome,
    text: Option<String>,
) -> Change {
    Change {
        file: member.rel.to_string(),
        id: ids.0,
        decision: ids.1,
        outcome,
        text,
        planned_from: crate::canonical::digest(planned_from.as_bytes()),
    }
}

/// Encrypt the plaintext among `targets` (from [`Scope::targets`]). Needs
/// no identity: encryption is to public keys.
pub fn plan_encrypt(targets: &[(&Member, &CollectionKeys)]) -> Result<Plan> {
    let mut plan = Plan::default();
    for (member, keys) in targets {
        let format = format_of(&member.rel)?;
        let text = std::fs::read_to_string(&member.abs)
            .map_err(|e| crate::error::Error::io(&member.abs, &e))?;
        let no_id = || (String::new(), false);
        let c = match format::parse_sealed(format, &text) {
            Ok(Some(s)) => change(
                member,
                &text,
                no_id(),
                Outcome::AlreadyEncrypted {
                    stale: s.recipients != keys.keys(),
                },
                None,
            ),
            Err(e) => change(member, &text, no_id(), Outcome::Failed(e.to_string()), None),
            Ok(None) => match ops::seal(format, &text, keys, None, None, false) {
                Ok(sealing) => {
                    let ids = format::parse_plain(format, &text)
                        .map(|d| object_id(member, &d.fields))
                        .unwrap_or_else(|_| no_id());
                    change(
                        member,
                        &text,
                        ids,
                        Outcome::Encrypted {
                            recipients: keys.recipients.len(),
                        },
                        Some(sealing.text),
                    )
                }
                Err(e) => change(
                    member,
                    &text,
                    no_id(),
                    Outcome::Failed(format!("cannot encrypt: {e}")),
                    None,
                ),
            },
        };
        plan.changes.push(c);
    }
    Ok(plan)
}

/// Re-encrypt every private file whose recorded recipients differ from the
/// manifest's (every file with `force`), decrypting with `ring` in memory.
pub fn plan_rekey(scope: &Scope, ring: &Keyring, force: bool) -> Result<Plan> {
    let mut plan = Plan::default();
    for (member, keys) in scope.private_members() {
        let format = format_of(&member.rel)?;
        let text = std::fs::read_to_string(&member.abs)
            .map_err(|e| crate::error::Error::io(&member.abs, &e))?;
        let none = || (String::new(), false);
        let sealed = match format::parse_sealed(format, &text) {
            Ok(Some(s)) => s,
            Ok(None) => {
                plan.changes
                    .push(change(member, &text, none(), Outcome::Plaintext, None));
                continue;
            }
            Err(e) => {
                plan.changes.push(change(
                    member,
                    &text,
                    none(),
                    Outcome::Failed(e.to_string()),
                    None,
                ));
                continue;
            }
        };
        let ids = object_id(member, &sealed.header);
        let wanted = keys.keys();
        if sealed.recipients == wanted && !force {
            plan.changes
                .push(change(member, &text, ids, Outcome::Current, None));
            continue;
        }
        let plain = match ops::decrypt(&member.rel, &sealed.armor, Some(ring)) {
            Ok((plain, _)) => plain,
            Err(e) => {
                let msg = format!("{}\n  fix: {}", e.reason(), e.fix());
                plan.changes
                    .push(change(member, &text, ids, Outcome::Failed(msg), None));
                continue;
            }
        };
        let c = match ops::seal(format, &plain, keys, Some(&text), Some(ring), force) {
            Ok(s) if s.text == text => change(member, &text, ids, Outcome::Current, None),
            Ok(s) => {
                let added = wanted
                    .iter()
                    .filter(|k| !sealed.recipients.contains(k))
                    .count();
                let removed = sealed
                    .recipients
                    .iter()
                    .filter(|k| !wanted.contains(k))
                    .map(|k| short(k))
                    .collect();
                let outcome = Outcome::Rekeyed {
                    recipients: wanted.len(),
                    added,
                    removed,
                };
                change(member, &text, ids, outcome, Some(s.text))
            }
            Err(e) => change(
                member,
                &text,
                ids,
                Outcome::Failed(format!("cannot re-encrypt: {e}")),
                None,
            ),
        };
        plan.changes.push(c);
    }
    Ok(plan)
}
