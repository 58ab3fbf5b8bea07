//! ctx: a toolchain for OpenContext v1 context repositories.
//!
//! The library holds every pipeline stage as plain functions; the `ctx` binary
//! only parses arguments and maps results to exit codes.
pub mod diag;
pub mod error;
pub mod frontmatter;
pub mod model;
pub mod pattern;
pub mod schema;
pub mod time;
pub mod yaml;

/// The OpenContext specification version this build implements.
pub const SPEC_VERSION: &str = "1.0";
pub mod json;
pub mod manifest;
pub mod load;
pub mod object;
pub mod validate;
pub mod cli;
pub mod conformance;
pub mod adapters;
pub mod resolve;
pub mod bundle;
