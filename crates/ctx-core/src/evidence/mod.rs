//! Evidence: what ctx records about what it emitted and wrote, and how
//! that record is checked later.
//!
//! - [`mod@record`]: the one recorder API every front end calls ("record a
//!   disclosure, a write, a decision"); the manifest's `audit` block decides
//!   which events it appends to the hash-chained log ([`crate::audit`]).
//! - [`bundle`]: the evidence of a compiled bundle — its audit events and,
//!   when `--sign` or the policy asks, a signed receipt over the exact bytes
//!   emitted — prepared before the product exists and committed with it.
//! - [`verify`]: bundles, receipts and decision records checked with
//!   nothing but the repository.
//!
//! The rule shared by all three: nothing is recorded for output that was
//! never produced, and no required record is skipped for output that was.

pub mod bundle;
pub mod delegated;
pub mod envelope;
pub mod record;
pub mod verify;

#[cfg(test)]
mod tests;

pub use record::{
    record, record_after, record_transaction, Access, BundleEvent, Record, Recorder, WriteKind,
};

/// The current time, whole seconds, RFC 3339: the clock of audit events
/// and receipts.
pub fn now() -> String {
    use chrono::SubsecRound;
    crate::time::format(&chrono::Utc::now().trunc_subsecs(0))
}
