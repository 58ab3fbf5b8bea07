//! The one place that parses YAML.
//!
//! Strict by design, because the result is validated, hashed and signed:
//! exactly one document, YAML 1.2 core schema (so `no` stays a string),
//! duplicate keys rejected, only core tags, bounded alias expansion, and a
//! 1-based line/column on every error. The JSON value is built straight from
//! saphyr-parser's event stream (see `build`), so the parser can be swapped
//! without touching callers. The common plain block shape of front matter
//! takes a line-oriented fast path first (see `fast`), which either returns
//! exactly what the event path would or declines.
use serde_json::Value;
use std::fmt;

mod build;
mod fast;
mod locate;
mod scalar;
#[cfg(test)]
mod tests;

/// Deepest nesting of sequences/mappings accepted (including via aliases), so
/// that later recursive consumers of the value cannot overflow the stack.
pub const MAX_DEPTH: usize = 128;

/// Most nodes that alias expansion may produce in one document; a "billion
/// laughs" document trips this after a few microseconds of work.
pub const MAX_ALIAS_NODES: usize = 10_000;

/// A YAML syntax or policy error with a 1-based position inside the parsed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub message: String,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for YamlError {}

/// Parse one YAML document into JSON.
///
/// An empty stream (or only comments) is `Value::Null`. Plain scalars follow
/// the YAML 1.2 core schema; integers that fit neither `i64` nor `u64`, and
/// `.inf` / `.nan`, are errors rather than lossy conversions. Non-string
/// scalar keys keep their source text (`1: a` is `{"1": "a"}`); null keys
/// and collection keys are errors. `<<` is an ordinary key (no merge in 1.2).
///
/// Most front matter is read by a line-oriented fast path; anything outside
/// its subset (and every error) goes through saphyr's event stream. Both
/// give identical results where both apply (checked by the fuzz target).
pub fn parse(src: &str) -> Result<Value, YamlError> {
    match fast::parse(src) {
        Some(value) => Ok(value),
        None => build::parse(src),
    }
}

/// [`parse`] without the fast path: saphyr's event stream only.
#[doc(hidden)]
pub fn parse_events(src: &str) -> Result<Value, YamlError> {
    build::parse(src)
}

/// The fast path alone: `None` means "not in its subset", never an error.
#[doc(hidden)]
pub fn parse_fast(src: &str) -> Option<Value> {
    fast::parse(src)
}

/// One step of a path into a document: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg<'a> {
    Key(&'a str),
    Index(usize),
}

/// 1-based (line, column) of the node at `path`, re-parsing `src` (error paths only).
///
/// For a key, the position of the key itself; for an index, the item. If the
/// path runs through an alias, the alias's position is returned. `None` when
/// the path does not exist or the text does not parse up to that point.
pub fn locate(src: &str, path: &[PathSeg<'_>]) -> Option<(u32, u32)> {
    locate::locate(src, path)
}
