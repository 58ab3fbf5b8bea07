//! The one recorder: every front end (the CLI now, the MCP and HTTP servers
//! later) says *what happened* as a [`Record`] — a bundle emitted, objects
//! read, search hits shown, objects written — and the manifest's `audit`
//! block decides which events that produces:
//!
//! | record              | flag             | events                                  |
//! |---------------------|------------------|-----------------------------------------|
//! | [`Record::Bundle`]  | `context_reads`  | `context.resolve` / `context.bundle`     |
//! |                     | `conflicts`      | one `context.conflict` per conflict      |
//! | [`Record::Read`]    | `context_reads`  | `context.read`                          |
//! | [`Record::Search`]  | `context_reads`  | `context.search`                        |
//! | [`Record::Write`]   | `context_writes` | `context.write` / `context.supersede`   |
//! |                     | `decisions`      | `decision.record` per decision written  |
//! | [`Record::Access`]  | `context_reads`  | `context.read` / `context.denied`       |
//! |                     | `context_writes` | `context.write` (a proposal, a refusal) |
//!
//! Ordering is the caller's one rule: **nothing is recorded for output that
//! was never produced, and nothing is produced that could not be recorded.**
//! [`Recorder::begin`] locks the log and verifies its chain *before* the
//! product exists; the caller then produces it (stages a file, writes the
//! objects) and [`Pending::commit`]s. A stream (stdout) cannot be staged,
//! so for streams the caller commits first and emits right after:
//! [`record`] for streams, [`record_after`] around file writes.

use serde_json::Value;

use crate::audit::{self, Actor, Appender};
use crate::error::{Error, Result};
use crate::manifest::Manifest;

/// Which command compiled and emitted a bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleEvent {
    /// `ctx resolve` (and future `resolve` tools of the servers).
    Resolve,
    /// `ctx bundle`, and `ctx export` (a bundle rendered into a file).
    Bundle,
}

impl BundleEvent {
    pub fn name(self) -> &'static str {
        match self {
            BundleEvent::Resolve => "context.resolve",
            BundleEvent::Bundle => "context.bundle",
        }
    }
}

/// How objects were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// A new object, or new content for an existing file (`add`, `private edit`).
    Write,
    /// A new version superseding the current one (`supersede`).
    Supersede,
    /// Same content, new ciphertext (`private encrypt`, `private rekey`).
    Reencrypt,
}

/// What a command did, in the terms an audit event needs: ids, never content.
#[derive(Debug, Clone)]
pub enum Record<'a> {
    /// A compiled bundle handed to its consumer. `refused` names why
    /// nothing was emitted after all (the event's outcome becomes `error`).
    Bundle {
        event: BundleEvent,
        bundle: &'a Value,
        refused: Option<String>,
    },
    /// Objects shown to a consumer (`get`, `list`).
    Read { actor: Actor, objects: Vec<String> },
    /// Search hits shown to a consumer (ids only; the query is not kept).
    Search { actor: Actor, objects: Vec<String> },
    /// Objects written into the repository; `decisions` are the ids among
    /// them whose type is `decision`.
    Write {
        actor: Actor,
        kind: WriteKind,
        objects: Vec<String>,
        decisions: Vec<String>,
    },
    /// A server's access decision that emits no bundle: an approval given or
    /// refused, a request refused, a write turned into a proposal. `details`
    /// (ids, codes, never content) goes under the event's `extensions`.
    Access {
        actor: Actor,
        access: Access,
        objects: Vec<String>,
        /// `allowed`, `denied`, `partial` or `error`.
        outcome: &'static str,
        reason: Option<String>,
        /// `(namespace, value)`, e.g. `("ctx.mcp", {"action": "context_get"})`.
        details: Option<(&'static str, Value)>,
    },
}

/// What an [`Record::Access`] was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading context (approval outcomes): `context.read`.
    Read,
    /// A refused read or request: `context.denied`.
    Denied,
    /// A write, or its proposal or refusal: `context.write`.
    Write,
}

fn ids<S: Into<String>>(objects: impl IntoIterator<Item = S>) -> Vec<String> {
    objects.into_iter().map(Into::into).collect()
}

impl<'a> Record<'a> {
    /// A bundle emitted by `event`.
    pub fn bundle(event: BundleEvent, bundle: &'a Value) -> Record<'a> {
        Record::Bundle {
            event,
            bundle,
            refused: None,
        }
    }

    /// `get`/`list`: the consumer named by `--agent`/`--role` read `objects`.
    pub fn read<S: Into<String>>(
        agent: Option<&str>,
        roles: &[String],
        objects: impl IntoIterator<Item = S>,
    ) -> Record<'a> {
        Record::Read {
            actor: Actor::from_flags(agent, roles),
            objects: ids(objects),
        }
    }

    /// `search`: the consumer was shown these hits.
    pub fn search<S: Into<String>>(
        agent: Option<&str>,
        roles: &[String],
        objects: impl IntoIterator<Item = S>,
    ) -> Record<'a> {
        Record::Search {
            actor: Actor::from_flags(agent, roles),
            objects: ids(objects),
        }
    }

    /// `add`/`supersede`/`private`: the writer (flags, else the local user)
    /// wrote `objects`; `kind` is the object type of each (for decisions).
    pub fn write<S: Into<String>>(
        agent: Option<&str>,
        roles: &[String],
        kind: WriteKind,
        objects: impl IntoIterator<Item = (S, bool)>,
    ) -> Record<'a> {
        let mut all = Vec::new();
        let mut decisions = Vec::new();
        for (id, is_decision) in objects {
            let id = id.into();
            if is_decision {
                decisions.push(id.clone());
            }
            all.push(id);
        }
        Record::Write {
            actor: Actor::from_flags(agent, roles),
            kind,
            objects: all,
            decisions,
        }
    }
}

/// The manifest's audit policy, ready to record.
#[derive(Debug, Clone)]
pub struct Recorder {
    config: Option<audit::Config>,
    namespace: String,
}

/// Events due for one record, with the log locked and its chain verified
/// (when any event is due). Dropping it records nothing.
#[derive(Debug)]
pub struct Pending {
    appender: Option<Appender>,
    events: Vec<Value>,
}

impl Pending {
    /// Nothing to record: the manifest does not ask for these events.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Append the events; returns how many were written.
    pub fn commit(self) -> Result<usize> {
        let n = self.events.len();
        if let Some(mut a) = self.appender {
            for e in self.events {
                a.append(e)?;
            }
        }
        Ok(n)
    }
}

/// What a transaction's journal keeps of the events, so that a recovery
/// appends them when the process that began them was killed.
impl crate::fs::txn::Evidence for Pending {
    fn journal(&self) -> Option<Value> {
        let a = self.appender.as_ref().filter(|_| !self.events.is_empty())?;
        Some(serde_json::json!({
            "log": a.log().path(),
            "after": a.seq(),
            "events": self.events,
        }))
    }

    fn commit(self) -> Result<()> {
        Pending::commit(self).map(|_| ())
    }
}

impl Recorder {
    /// Read the manifest's `audit` block (an invalid block is an error).
    pub fn open(m: &Manifest) -> Result<Recorder> {
        Ok(Recorder {
            config: audit::Config::from_manifest(m)?,
            namespace: m.id.clone(),
        })
    }

    /// The events `record` produces under this policy (empty when none is due).
    pub fn events(&self, record: &Record<'_>, at: &str) -> Vec<Value> {
        let Some(c) = &self.config else {
            return Vec::new();
        };
        let ns = Some(self.namespace.as_str());
        let mut out = Vec::new();
        match record {
            Record::Bundle {
                event,
                bundle,
                refused,
            } => {
                if c.context_reads {
                    let mut e = audit::bundle_event(event.name(), bundle, at);
                    if let Some(why) = refused {
                        e["outcome"] = Value::from("error");
                        e["reason"] = Value::from(why.as_str());
                    }
                    out.push(e);
                }
                if c.conflicts && refused.is_none() {
                    out.extend(audit::conflict_events(bundle, at));
                }
            }
            Record::Read { actor, objects } if c.context_reads => {
                out.push(audit::objects_event("context.read", actor, objects, ns, at));
            }
            Record::Search { actor, objects } if c.context_reads => {
                out.push(audit::objects_event(
                    "context.search",
                    actor,
                    objects,
                    ns,
                    at,
                ));
            }
            Record::Write {
                actor,
                kind,
                objects,
                decisions,
            } => {
                if c.context_writes && !objects.is_empty() {
                    let name = match kind {
                        WriteKind::Supersede => "context.supersede",
                        WriteKind::Write | WriteKind::Reencrypt => "context.write",
                    };
                    out.push(audit::objects_event(name, actor, objects, ns, at));
                }
                if c.decisions {
                    for d in decisions {
                        out.push(audit::objects_event(
                            "decision.record",
                            actor,
                            std::slice::from_ref(d),
                            ns,
                            at,
                        ));
                    }
                }
            }
            Record::Access {
                actor,
                access,
                objects,
                outcome,
                reason,
                details,
            } => {
                let (name, due) = match access {
                    Access::Read => ("context.read", c.context_reads),
                    Access::Denied => ("context.denied", c.context_reads),
                    Access::Write => ("context.write", c.context_writes),
                };
                if due {
                    let mut e = audit::objects_event(name, actor, objects, ns, at);
                    e["outcome"] = Value::from(*outcome);
                    if let Some(r) = reason {
                        e["reason"] = Value::from(r.as_str());
                    }
                    if let Some((key, v)) = details {
                        let mut ext = serde_json::Map::new();
                        ext.insert((*key).to_string(), v.clone());
                        e["extensions"] = Value::Object(ext);
                    }
                    out.push(e);
                }
            }
            Record::Read { .. } | Record::Search { .. } => {}
        }
        out
    }

    /// Prepare to record: when events are due, lock the log and verify its
    /// chain now, before the caller produces anything.
    pub fn begin(&self, record: &Record<'_>, at: &str) -> Result<Pending> {
        let events = self.events(record, at);
        let appender = match (&self.config, events.is_empty()) {
            (Some(c), false) => Some(c.log.begin().map_err(refused)?),
            _ => None,
        };
        Ok(Pending { appender, events })
    }

    /// Record now (for output about to be streamed).
    pub fn record(&self, record: &Record<'_>, at: &str) -> Result<usize> {
        self.begin(record, at)?.commit().map_err(refused)
    }
}

fn refused(e: Error) -> Error {
    Error::Invalid(format!(
        "the manifest's audit policy requires an audit event, which could not be recorded, so nothing was emitted: {e}"
    ))
}

/// Record `record` now, under the manifest's policy, before its output is
/// streamed (stdout): if the event cannot be written, emit nothing.
pub fn record(m: &Manifest, record: Record<'_>) -> Result<()> {
    Recorder::open(m)?
        .record(&record, &super::now())
        .map(|_| ())
}

/// Write files and record them as one transaction ([`crate::fs::txn`]): the
/// log is locked and verified first, `stage` stages the files, then the
/// transaction renames them into place and appends the events — a kill at any
/// point leaves the old state, or a journal the next writer completes (the
/// files and their events). `None` (a dry run) records nothing.
pub fn record_transaction<T>(
    m: &Manifest,
    record: Option<Record<'_>>,
    stage: impl FnOnce(&mut crate::fs::Txn) -> Result<T>,
) -> Result<T> {
    let pending = match record {
        Some(r) => Some(Recorder::open(m)?.begin(&r, &super::now())?),
        None => None,
    };
    let mut txn = crate::fs::Txn::new(&m.root);
    let out = stage(&mut txn)?;
    match pending {
        Some(p) => txn.commit(p),
        None => txn.commit(()),
    }
    .map_err(|e| txn_error(&m.root, e))?;
    Ok(out)
}

/// A failed transaction as a command error (paths relative to `root`).
pub fn txn_error(root: &std::path::Path, e: crate::fs::txn::TxnError) -> Error {
    use crate::fs::txn::TxnError;
    let rel = |p: &std::path::Path| {
        p.strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    };
    match e {
        TxnError::Exists(p) => crate::write::WriteError::Exists(rel(&p)).into(),
        TxnError::Changed(p) => crate::write::WriteError::Changed(rel(&p)).into(),
        TxnError::Io { path, source } => Error::io(&path, &source),
        TxnError::Evidence(e) => Error::Invalid(format!(
            "the output was written, but its audit event could not be recorded yet (the next write records it): {e}"
        )),
    }
}

/// Produce an output that lands in files, then record it: the log is
/// locked and verified first, `produce` runs, and only when it succeeds are
/// the events appended (`None`, e.g. for a dry run, records nothing). A
/// failed `produce` records nothing; a failed append after a successful
/// `produce` is reported as such.
pub fn record_after<T>(
    m: &Manifest,
    record: Option<Record<'_>>,
    produce: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let Some(record) = record else {
        return produce();
    };
    let pending = Recorder::open(m)?.begin(&record, &super::now())?;
    let out = produce()?;
    pending.commit().map_err(|e| {
        Error::Invalid(format!(
            "the output was written, but its audit event could not be recorded: {e}"
        ))
    })?;
    Ok(out)
}
