//! Repairs of what a crash or a full disk leaves in an audit log, made under
//! the log's lock by the next appender, each recorded in the chain.
//!
//! - A torn final line after the head's entry (a short write, a kill inside
//!   one `write`): cut back to the last whole line, then a recovery entry —
//!   the chain link alone, `{"extensions":{"ctx.audit":{"seq","prev",
//!   "recovery":{"at","reason","removed_bytes","removed_digest"}}}}` — so the
//!   repair is itself on the record (a vault's sealed log included: the link
//!   is in clear there too).
//! - The events of an interrupted transaction ([`crate::fs::txn`]): appended
//!   by [`complete`] when the log does not have them yet, their link marked
//!   `"recovered": true`.

use std::path::Path;

use serde_json::{json, Value};

use super::{Appender, Log, EXTENSION};
use crate::canonical;
use crate::error::{Error, Result};

/// A torn final line: where it starts and what it holds.
#[derive(Debug)]
pub(super) struct Torn {
    pub at: u64,
    pub bytes: Vec<u8>,
}

/// Cut the torn line off and record that in the chain.
pub(super) fn cut_torn(a: &mut Appender, torn: Torn) -> Result<()> {
    let path = a.log.path.clone();
    a.file
        .set_len(torn.at)
        .and_then(|()| a.file.sync_data())
        .map_err(|e| Error::io(&path, &e))?;
    let note = json!({
        "at": crate::evidence::now(),
        "reason": "cut off a torn final line an interrupted append left",
        "removed_bytes": torn.bytes.len(),
        "removed_digest": canonical::digest(&torn.bytes),
    });
    a.append_linked(json!({}), Some(("recovery", note)))?;
    Ok(())
}

/// Append the events an interrupted transaction journaled (`{"log", "after",
/// "events"}`, the log path relative to `root` or absolute) that its log does
/// not hold yet; returns how many were appended. The transaction held the log
/// from `after` on, so its events, if any were appended, directly follow
/// entry `after`: those already there are recognised and not appended twice.
pub fn complete(root: &Path, journal: &Value) -> Result<usize> {
    let bad = || Error::Invalid(format!("not a journaled audit record: {journal}"));
    let log = journal["log"].as_str().ok_or_else(bad)?;
    let log = Path::new(log);
    let log = Log::new(if log.is_absolute() {
        log.to_path_buf()
    } else {
        root.join(log)
    });
    let after = journal["after"].as_u64().ok_or_else(bad)?;
    let events = journal["events"].as_array().ok_or_else(bad)?;
    let mut a = log.begin()?;
    let present: Vec<Value> = log
        .read()?
        .into_iter()
        .filter(|e| e.seq > after)
        .map(|e| unlinked(e.event))
        .collect();
    let done = events
        .iter()
        .zip(&present)
        .take_while(|(want, have)| want == have)
        .count();
    for e in &events[done..] {
        a.append_linked(e.clone(), Some(("recovered", json!(true))))?;
    }
    Ok(events.len() - done)
}

/// An event as it was before the appender linked it.
fn unlinked(mut event: Value) -> Value {
    if let Some(o) = event.as_object_mut() {
        let empty = match o.get_mut("extensions").and_then(Value::as_object_mut) {
            Some(ext) => {
                ext.remove(EXTENSION);
                ext.is_empty()
            }
            None => false,
        };
        if empty {
            o.remove("extensions");
        }
    }
    event
}
