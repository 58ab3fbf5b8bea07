//! The Context Layer exchange (seed 000; 0.2-draft wire form by default,
//! 0.1-draft on request), built on the resolver: request → decision →
//! (approval) → scoped bundle → consumption and actions → receipts, plus
//! memory proposals and minimum-reveal discovery.
//!
//! Layout, bottom up:
//! - [`canon`], [`wire`], [`schema`], [`error`]: the local-core profile's canonical
//!   JSON, ids and times; the two wire forms; closed schemas; error codes.
//! - [`policy`], [`evaluate`], [`bundle`], [`envelope`], [`consumer`],
//!   [`proposal`], [`receipts`]: the protocol, as pure functions over JSON values
//!   (what the conformance kit exercises through [`kit`]).
//! - [`config`], [`view`], [`local`], [`state`]: the repository side — the
//!   `ctx.exchange` manifest extension, the resolver adapter (the one place the
//!   exchange asks what a consumer may obtain), the policy derived from both,
//!   and the `.ctx/exchange/` state folder; [`policy_check`] reports the
//!   extension's issues as `validate` findings.
//! - [`ops`]: the operations front ends call (CLI now; MCP and HTTP later).
//!
//! Every function takes plain inputs and returns typed results; none prints.

pub mod bundle;
pub mod canon;
pub mod config;
pub mod consumer;
pub mod envelope;
pub mod error;
pub mod evaluate;
pub mod idempotency;
pub mod kit;
pub mod local;
pub mod ops;
pub mod policy;
pub mod policy_check;
pub mod proposal;
pub mod receipts;
pub mod schema;
pub mod state;
pub mod suite;
pub mod view;
pub mod wire;

pub use error::{ClError, ClResult};
pub use wire::SpecVersion;
