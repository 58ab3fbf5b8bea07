//! The one place that parses YAML (placeholder interface; implementation pending).
use serde_json::Value;

/// A YAML syntax or policy error with a 1-based position inside the parsed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub message: String,
    pub line: u32,
    pub column: u32,
}

/// Parse one YAML document into JSON.
pub fn parse(src: &str) -> Result<Value, YamlError> {
    let _ = src;
    todo!()
}

/// One step of a path into a document: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg<'a> {
    Key(&'a str),
    Index(usize),
}

/// 1-based (line, column) of the node at `path`, re-parsing `src` (error paths only).
pub fn locate(src: &str, path: &[PathSeg<'_>]) -> Option<(u32, u32)> {
    let _ = (src, path);
    todo!()
}
