//! ctx: a toolchain for OpenContext v1 context repositories.
//!
//! The library holds every pipeline stage as plain functions; the `ctx` binary
//! (and every other front end) only parses arguments, calls in here and renders.
//!
//! The library never prints: what reaches stdout or stderr is the front end's
//! decision, so operations return reports and findings instead. Unit tests may
//! print (notes about skipped fixtures), hence `not(test)`.
#![cfg_attr(
    not(test),
    deny(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)
)]
pub mod access;
pub mod adapters;
pub mod approvals;
pub mod audit;
pub mod budget;
pub mod bundle;
pub use ctx_base::canonical;
pub mod changes;
pub mod ci;
pub mod conformance;
pub mod diag;
pub mod disclose;
pub mod doctor;
pub mod error;
pub mod evidence;
pub mod exchange;
pub mod export;
pub use ctx_base::frontmatter;
pub mod fs;
pub mod git;
pub mod graph;
pub mod history;
pub mod init;
pub use ctx_base::jcs;
pub use ctx_base::json;
pub mod keys;
pub mod lint;
pub mod load;
pub mod manifest;
pub mod model;
pub mod object;
pub use ctx_base::pattern;
pub mod personal;
pub mod private;
pub mod proposals;
pub mod provider;
pub mod receipt;
pub mod reformat;
pub mod resolve;
pub mod schema;
pub mod signing;
pub use ctx_base::time;
pub mod validate;
pub mod view;
pub mod write;
pub use ctx_base::yaml;

#[cfg(test)]
pub(crate) mod testutil;

/// The OpenContext specification version this build implements.
pub const SPEC_VERSION: &str = "1.0";
