//! Receipts (local-core profile §5): payload-free evidence records, kept in an
//! append-only, hash-chained JSON Lines log whose state is anchored by a
//! separate, Ed25519-signed anchor chain.

pub mod anchor;
pub mod log;
pub mod record;
pub mod recover;
mod seen;

pub use log::{LogState, ReceiptLog};
pub use record::{build, validate, ReceiptDraft, RECEIPT_PREFIX};
