//! The bottom layer of ctx: text formats and values every other crate builds on —
//! YAML 1.2 (core schema, with positions), strict JSON, RFC 8785 canonical JSON and
//! digests, Markdown front matter, object-id patterns and instants.
//!
//! It may import no other ctx crate and does no I/O: what it parses comes in as
//! text and leaves as values or errors with positions, so it is pure and testable.

pub mod canonical;
pub mod frontmatter;
pub mod jcs;
pub mod json;
pub mod pattern;
pub mod time;
pub mod yaml;
