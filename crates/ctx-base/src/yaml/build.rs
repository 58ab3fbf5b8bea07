//! Builds a `serde_json::Value` straight from saphyr-parser's event stream.
//!
//! There is no intermediate YAML tree: each scalar's `String` is moved into
//! the JSON value it becomes, containers are plain `Vec` / `Map` frames on an
//! explicit stack (so nesting never recurses), and we pull events one at a
//! time so that the first policy violation stops the parse immediately.
use super::scalar::{self, CoreTag};
use super::{YamlError, MAX_ALIAS_NODES, MAX_DEPTH};
use saphyr_parser::{Event, Marker, Parser, ScalarStyle, ScanError, Span, Tag};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Parse exactly one document (see [`super::parse`]).
pub(crate) fn parse(src: &str) -> Result<Value, YamlError> {
    parse_unclamped(src).map_err(|mut e| {
        (e.line, e.column) = clamp(src, (e.line, e.column));
        e
    })
}

fn parse_unclamped(src: &str) -> Result<Value, YamlError> {
    let mut parser = Parser::new_from_str(src);
    let mut b = Builder::default();
    let mut documents = 0u32;
    while let Some(next) = parser.next_event() {
        let (ev, span) = next.map_err(scan_error)?;
        match ev {
            Event::StreamEnd => break,
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(err_at(
                        span.start,
                        "expected a single YAML document, found another one",
                    ));
                }
            }
            Event::Scalar(text, style, anchor, tag) => b.scalar(text, style, anchor, tag, span)?,
            Event::SequenceStart(anchor, tag) => b.open(false, anchor, tag.as_deref(), span)?,
            Event::MappingStart(anchor, tag) => b.open(true, anchor, tag.as_deref(), span)?,
            Event::SequenceEnd | Event::MappingEnd => b.close(),
            Event::Alias(id) => b.alias(id, span)?,
        }
    }
    Ok(b.root.unwrap_or(Value::Null))
}

/// saphyr places end-of-input one line past a text that lacks a final line
/// break; pull such positions back to just after the last character so a
/// diagnostic never points past the end of the text. Error paths only.
pub(crate) fn clamp(src: &str, (line, column): (u32, u32)) -> (u32, u32) {
    let b = src.as_bytes();
    // Line breaks as YAML counts them: `\n`, `\r\n` and a lone `\r`.
    let is_break = |i: usize| b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) != Some(&b'\n'));
    let breaks = (0..b.len()).filter(|&i| is_break(i)).count();
    let last_line = u32::try_from(breaks + 1).unwrap_or(u32::MAX);
    if line <= last_line {
        return (line, column);
    }
    let tail = src.rfind(['\n', '\r']).map_or(src, |i| &src[i + 1..]);
    let col = u32::try_from(tail.chars().count() + 1).unwrap_or(u32::MAX);
    (last_line, col)
}

/// Turn saphyr's scanner error (1-based line, 0-based column) into ours.
pub(crate) fn scan_error(e: ScanError) -> YamlError {
    err_at(*e.marker(), e.info())
}

pub(crate) fn err_at(m: Marker, message: impl std::fmt::Display) -> YamlError {
    YamlError {
        message: message.to_string(),
        line: u32::try_from(m.line()).unwrap_or(u32::MAX),
        column: u32::try_from(m.col() + 1).unwrap_or(u32::MAX),
    }
}

/// An open collection.
enum Frame {
    Seq {
        items: Vec<Value>,
        anchor: usize,
    },
    Map {
        map: Map<String, Value>,
        /// The key whose value comes next; `None` while waiting for a key.
        key: Option<String>,
        anchor: usize,
    },
}

/// A completed anchored node, kept for later aliases.
struct Anchored {
    value: Value,
    /// Node count of `value`, charged against the expansion budget per alias.
    nodes: usize,
    /// Nesting height of `value`, so an alias cannot exceed [`MAX_DEPTH`].
    height: usize,
    /// Source text when the node is a scalar, so an alias can serve as a key.
    key_text: Option<String>,
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    /// Indexed by saphyr's anchor id (ids are small, dense and start at 1).
    anchors: Vec<Option<Anchored>>,
    /// Nodes produced by alias expansion so far in this document.
    expanded: usize,
    root: Option<Value>,
}

impl Builder {
    /// Whether the next node is a mapping key.
    fn expecting_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    fn scalar(
        &mut self,
        text: Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<Cow<'_, Tag>>,
        span: Span,
    ) -> Result<(), YamlError> {
        let tag = match tag {
            Some(t) => Some(scalar::core_tag(&t).map_err(|m| err_at(span.start, m))?),
            None => None,
        };
        let text = text.into_owned();
        if self.expecting_key() {
            let untagged_plain = tag.is_none() && style == ScalarStyle::Plain;
            if untagged_plain && scalar::is_null(&text) {
                return Err(err_at(span.start, "null mapping keys are not supported"));
            }
            // Validate tagged keys (and get the value an anchor would need).
            let value = if tag.is_some() || anchor != 0 {
                let v = scalar::to_value(text.clone(), style, tag)
                    .map_err(|m| err_at(span.start, m))?;
                if v.is_null() {
                    return Err(err_at(span.start, "null mapping keys are not supported"));
                }
                Some(v)
            } else {
                None
            };
            if let Some(value) = value.filter(|_| anchor != 0) {
                self.remember(anchor, &value, Some(text.clone()));
            }
            return self.key(text, span);
        }
        let key_text = (anchor != 0).then(|| text.clone());
        let value = scalar::to_value(text, style, tag).map_err(|m| err_at(span.start, m))?;
        if anchor != 0 {
            self.remember(anchor, &value, key_text);
        }
        self.push(value);
        Ok(())
    }

    /// Record a key in the innermost mapping, rejecting duplicates at the
    /// position of the second occurrence.
    fn key(&mut self, text: String, span: Span) -> Result<(), YamlError> {
        if let Some(Frame::Map { map, key, .. }) = self.stack.last_mut() {
            if map.contains_key(&text) {
                return Err(err_at(span.start, format!("duplicate key `{text}`")));
            }
            *key = Some(text);
        }
        Ok(())
    }

    fn open(
        &mut self,
        is_map: bool,
        anchor: usize,
        tag: Option<&Tag>,
        span: Span,
    ) -> Result<(), YamlError> {
        if self.expecting_key() {
            let what = if is_map { "a mapping" } else { "a sequence" };
            return Err(err_at(
                span.start,
                format!("{what} cannot be used as a mapping key"),
            ));
        }
        if let Some(tag) = tag {
            let ok = match scalar::core_tag(tag).map_err(|m| err_at(span.start, m))? {
                CoreTag::Map => is_map,
                CoreTag::Seq => !is_map,
                _ => false,
            };
            if !ok {
                let what = if is_map { "mapping" } else { "sequence" };
                return Err(err_at(
                    span.start,
                    format!(
                        "tag `{}` cannot be applied to a {what}",
                        scalar::display_tag(tag)
                    ),
                ));
            }
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(err_at(
                span.start,
                format!("nesting is deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.stack.push(if is_map {
            Frame::Map {
                map: Map::new(),
                key: None,
                anchor,
            }
        } else {
            Frame::Seq {
                items: Vec::new(),
                anchor,
            }
        });
        Ok(())
    }

    fn close(&mut self) {
        let (value, anchor) = match self.stack.pop() {
            Some(Frame::Seq { items, anchor }) => (Value::Array(items), anchor),
            Some(Frame::Map { map, anchor, .. }) => (Value::Object(map), anchor),
            None => return,
        };
        if anchor != 0 {
            self.remember(anchor, &value, None);
        }
        self.push(value);
    }

    fn alias(&mut self, id: usize, span: Span) -> Result<(), YamlError> {
        let Some(a) = self.anchors.get(id).and_then(Option::as_ref) else {
            // saphyr rejects unknown anchor names itself; an id we have not
            // stored yet means the alias sits inside its own anchor.
            return Err(err_at(span.start, "alias refers to its own enclosing node"));
        };
        if self.expecting_key() {
            return match &a.key_text {
                Some(_) if a.value.is_null() => {
                    Err(err_at(span.start, "null mapping keys are not supported"))
                }
                Some(text) => {
                    let text = text.clone();
                    self.key(text, span)
                }
                None => Err(err_at(
                    span.start,
                    "a collection cannot be used as a mapping key",
                )),
            };
        }
        self.expanded = self.expanded.saturating_add(a.nodes);
        if self.expanded > MAX_ALIAS_NODES {
            return Err(err_at(
                span.start,
                format!("alias expansion exceeds {MAX_ALIAS_NODES} nodes (possible alias bomb)"),
            ));
        }
        if self.stack.len() + a.height > MAX_DEPTH {
            return Err(err_at(
                span.start,
                format!("alias expansion nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        let value = a.value.clone();
        self.push(value);
        Ok(())
    }

    /// Keep a copy of an anchored node. Anchors are rare in practice, so the
    /// clone and the measuring walk stay off the hot path.
    fn remember(&mut self, id: usize, value: &Value, key_text: Option<String>) {
        if self.anchors.len() <= id {
            self.anchors.resize_with(id + 1, || None);
        }
        let (nodes, height) = measure(value);
        self.anchors[id] = Some(Anchored {
            value: value.clone(),
            nodes,
            height,
            key_text,
        });
    }

    /// Attach a finished node to its parent (or make it the document root).
    fn push(&mut self, value: Value) {
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map { map, key, .. }) => {
                if let Some(k) = key.take() {
                    map.insert(k, value);
                }
            }
        }
    }
}

/// (node count, nesting height) of a value. Recursion is bounded because
/// every value we build is at most [`MAX_DEPTH`] deep.
fn measure(v: &Value) -> (usize, usize) {
    match v {
        Value::Array(items) => items.iter().fold((1, 1), |(n, h), c| {
            let (cn, ch) = measure(c);
            (n.saturating_add(cn), h.max(ch + 1))
        }),
        Value::Object(map) => map.values().fold((1, 1), |(n, h), c| {
            let (cn, ch) = measure(c);
            (n.saturating_add(cn), h.max(ch + 1))
        }),
        _ => (1, 0),
    }
}
