//! Rewriting YAML text in place: a few scalars re-spelled, top-level keys moved
//! as whole blocks of lines. Everything else — comments, blank lines, indentation,
//! flow style, quoting the author chose — stays byte for byte, which is why this
//! works on the text with positions from saphyr's event stream rather than
//! re-emitting a parsed tree.

use saphyr_parser::{Event, Parser, ScalarStyle};

use super::order;
use super::value::{canonical_timestamp, is_instant_path, yaml11_bool_word, PathStep};
use super::Change;

/// A top-level key and where it starts (1-based line, 0-based column).
struct TopKey {
    name: String,
    line: usize,
    col: usize,
}

/// One open collection while walking events.
enum Frame {
    Map { key: Option<String> },
    Seq { next: usize },
}

/// What one pass over the events found.
#[derive(Default)]
struct Scan {
    /// The root is a block mapping (not `{...}`, not a scalar or a list).
    block_root: bool,
    /// Anchors or aliases: moving keys could put an alias before its anchor.
    anchors: bool,
    top: Vec<TopKey>,
    /// Lines (1-based) inside a multi-line scalar: never comments, never blank separators.
    protected: Vec<(usize, usize)>,
    /// (char start, char end, replacement, change).
    edits: Vec<(usize, usize, String, Change)>,
}

fn path_text(path: &[PathStep<'_>]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            PathStep::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            PathStep::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// The YAML parser's reason a text cannot be reformatted (it does not parse).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SyntaxError(String);

fn scan(src: &str) -> Result<Scan, SyntaxError> {
    let mut out = Scan::default();
    let mut frames: Vec<Frame> = Vec::new();
    let mut parser = Parser::new_from_str(src);
    let chars: Vec<char> = if src.is_ascii() {
        Vec::new()
    } else {
        src.chars().collect()
    };
    let char_at = |i: usize| -> Option<char> {
        if chars.is_empty() {
            src.as_bytes().get(i).map(|b| *b as char)
        } else {
            chars.get(i).copied()
        }
    };
    // After a node completes, the enclosing collection moves on.
    fn advance(frames: &mut [Frame]) {
        match frames.last_mut() {
            Some(Frame::Map { key }) => *key = None,
            Some(Frame::Seq { next }) => *next += 1,
            None => {}
        }
    }
    while let Some(next) = parser.next_event() {
        let (ev, span) = next.map_err(|e| SyntaxError(e.info().to_string()))?;
        let (start, end) = (span.start, span.end);
        if end.line() > start.line() + 1 || (end.line() == start.line() + 1 && end.col() > 0) {
            let last = if end.col() == 0 {
                end.line() - 1
            } else {
                end.line()
            };
            out.protected.push((start.line() + 1, last));
        }
        let is_key = matches!(frames.last(), Some(Frame::Map { key: None }));
        match ev {
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                out.anchors |= anchor != 0;
                if frames.is_empty() {
                    out.block_root = matches!(ev, Event::MappingStart(..))
                        && char_at(start.index()) != Some('{');
                }
                if is_key {
                    // A collection as a key: leave the document as it is.
                    out.anchors = true;
                }
                frames.push(match ev {
                    Event::MappingStart(..) => Frame::Map { key: None },
                    _ => Frame::Seq { next: 0 },
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                frames.pop();
                advance(&mut frames);
            }
            Event::Alias(_) => {
                out.anchors = true;
                if is_key {
                    if let Some(Frame::Map { key }) = frames.last_mut() {
                        *key = Some(String::new());
                    }
                } else {
                    advance(&mut frames);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                out.anchors |= anchor != 0;
                if is_key {
                    if frames.len() == 1 {
                        out.top.push(TopKey {
                            name: text.to_string(),
                            line: start.line(),
                            col: start.col(),
                        });
                    }
                    if let Some(Frame::Map { key }) = frames.last_mut() {
                        *key = Some(text.into_owned());
                    }
                    continue;
                }
                if tag.is_none() && start.line() == end.line() {
                    let path: Vec<PathStep<'_>> = frames
                        .iter()
                        .filter_map(|f| match f {
                            Frame::Map { key } => key.as_deref().map(PathStep::Key),
                            Frame::Seq { next } => Some(PathStep::Index(*next)),
                        })
                        .collect();
                    let fixed = is_instant_path(&path)
                        .then(|| canonical_timestamp(&text))
                        .flatten();
                    let (start_i, end_i) = (start.index(), end.index());
                    match (fixed, style) {
                        (Some(new), ScalarStyle::Plain) => out.edits.push((
                            start_i,
                            end_i,
                            new.clone(),
                            Change::Timestamp {
                                field: path_text(&path),
                                from: text.to_string(),
                                to: new,
                            },
                        )),
                        (Some(new), ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted) => {
                            let q = if style == ScalarStyle::SingleQuoted {
                                '\''
                            } else {
                                '"'
                            };
                            out.edits.push((
                                start_i,
                                end_i,
                                format!("{q}{new}{q}"),
                                Change::Timestamp {
                                    field: path_text(&path),
                                    from: text.to_string(),
                                    to: new,
                                },
                            ));
                        }
                        (None, ScalarStyle::Plain) if yaml11_bool_word(&text) => out.edits.push((
                            start_i,
                            end_i,
                            format!("\"{text}\""),
                            Change::Quoted {
                                field: path_text(&path),
                                word: text.to_string(),
                            },
                        )),
                        _ => {}
                    }
                }
                advance(&mut frames);
            }
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd
            | Event::Nothing => {}
        }
    }
    Ok(out)
}

/// Byte offset of every char index (identity for ASCII text).
fn byte_offsets(src: &str) -> Option<Vec<usize>> {
    (!src.is_ascii()).then(|| {
        src.char_indices()
            .map(|(b, _)| b)
            .chain(std::iter::once(src.len()))
            .collect()
    })
}

/// Split into lines, each keeping its terminator. None when a lone `\r` makes
/// YAML's line count differ from ours.
fn lines(src: &str) -> Option<Vec<&str>> {
    let b = src.as_bytes();
    if b.iter()
        .enumerate()
        .any(|(i, &c)| c == b'\r' && b.get(i + 1) != Some(&b'\n'))
    {
        return None;
    }
    Some(src.split_inclusive('\n').collect())
}

/// Format one YAML mapping document (an object file, or front matter).
/// Returns the new text and what changed; the caller verifies the meaning.
pub fn format(src: &str) -> Result<(String, Vec<Change>), SyntaxError> {
    let scan = scan(src)?;
    let mut changes = Vec::new();
    let mut text = src.to_string();
    if !scan.edits.is_empty() {
        let offsets = byte_offsets(src);
        let byte = |i: usize| offsets.as_ref().map_or(i, |o| o[i]);
        let mut edits = scan.edits;
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        for (s, e, new, change) in edits {
            text.replace_range(byte(s)..byte(e), &new);
            changes.push(change);
        }
        changes.reverse();
    }
    if let Some(reordered) = reorder(
        &text,
        &scan.top,
        &scan.protected,
        scan.block_root && !scan.anchors,
    ) {
        text = reordered;
        changes.insert(0, Change::KeyOrder);
    }
    Ok((text, changes))
}

/// Move top-level key blocks into canonical order; None when already in order
/// or when the document's shape does not allow a safe line-level move.
fn reorder(
    text: &str,
    top: &[TopKey],
    protected: &[(usize, usize)],
    movable: bool,
) -> Option<String> {
    let names: Vec<&str> = top.iter().map(|k| k.name.as_str()).collect();
    let sorted = order::sorted_indices(&names);
    if sorted.iter().enumerate().all(|(n, &i)| n == i) || !movable {
        return None;
    }
    if top.iter().any(|k| k.col != 0) || top.windows(2).any(|w| w[0].line >= w[1].line) {
        return None;
    }
    let lines = lines(text)?;
    let is_protected = |l: usize| protected.iter().any(|&(a, b)| l >= a && l <= b);
    // 1-based line → its text.
    let line = |l: usize| lines[l - 1];
    let comment = |l: usize| line(l).starts_with('#') && !is_protected(l);
    let blank = |l: usize| line(l).trim().is_empty() && !is_protected(l);
    // Each block starts at its key line, or at the comment lines directly above it.
    let mut starts: Vec<usize> = top.iter().map(|k| k.line).collect();
    for i in 0..starts.len() {
        let floor = if i == 0 { 0 } else { top[i - 1].line };
        while starts[i] - 1 > floor && comment(starts[i] - 1) {
            starts[i] -= 1;
        }
    }
    // Comments, blank lines and `...` after the last value stay at the end.
    let last_key = top[top.len() - 1].line;
    let mut epilogue = lines.len() + 1;
    while epilogue - 1 > last_key
        && (blank(epilogue - 1)
            || comment(epilogue - 1)
            || (line(epilogue - 1).starts_with("...") && !is_protected(epilogue - 1)))
    {
        epilogue -= 1;
    }
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let join = |from: usize, to: usize| -> String { (from..to).map(line).collect() };
    let mut blocks: Vec<String> = Vec::with_capacity(top.len());
    for i in 0..top.len() {
        let end = starts.get(i + 1).copied().unwrap_or(epilogue);
        let mut b = join(starts[i], end);
        if !b.ends_with('\n') {
            b.push_str(newline);
        }
        blocks.push(b);
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push_str(&join(1, starts[0]));
    for i in sorted {
        out.push_str(&blocks[i]);
    }
    out.push_str(&join(epilogue, lines.len() + 1));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(src: &str) -> String {
        format(src).unwrap().0
    }

    #[test]
    fn reorders_blocks_with_their_comments() {
        let src = "# header stays\n\n# about the title\ntitle: T  # inline\n\n# about the id\nid: a\ntags:\n  - x\n# trailing\n";
        assert_eq!(
            fmt(src),
            "# header stays\n\n# about the id\nid: a\n# about the title\ntitle: T  # inline\n\ntags:\n  - x\n# trailing\n"
        );
    }

    #[test]
    fn already_canonical_is_untouched() {
        let src = "id: a\ntype: note\n# c\ntitle: T\n";
        let (out, changes) = format(src).unwrap();
        assert_eq!(out, src);
        assert!(changes.is_empty());
    }

    #[test]
    fn timestamps_and_yaml11_words() {
        let src = "id: a\nupdated: 2026-08-01\ncreated: '2026-07-01 10:00:00Z'\nextensions:\n  com.x.y: {flag: no, list: [on, off, maybe]}\n";
        assert_eq!(
            fmt(src),
            "id: a\ncreated: '2026-07-01T10:00:00Z'\nupdated: 2026-08-01T00:00:00Z\nextensions:\n  com.x.y: {flag: \"no\", list: [\"on\", \"off\", maybe]}\n"
        );
    }

    #[test]
    fn block_scalars_and_multiline_quotes_move_whole() {
        let src =
            "content: |+\n  # not a comment\n\n  more\n\n\ntitle: \"two\n  lines\"\nid: a\n# end\n";
        let out = fmt(src);
        assert_eq!(
            out,
            "id: a\ntitle: \"two\n  lines\"\ncontent: |+\n  # not a comment\n\n  more\n\n\n# end\n"
        );
        assert_eq!(
            crate::yaml::parse(&out).unwrap(),
            crate::yaml::parse(src).unwrap()
        );
    }

    #[test]
    fn anchors_and_flow_roots_keep_their_order() {
        assert_eq!(
            fmt("title: &t T\nid: a\nsummary: *t\n"),
            "title: &t T\nid: a\nsummary: *t\n"
        );
        assert_eq!(fmt("{title: T, id: a}\n"), "{title: T, id: a}\n");
    }

    #[test]
    fn missing_final_newline_and_crlf() {
        assert_eq!(fmt("title: T\r\nid: a"), "id: a\r\ntitle: T\r\n");
        let (out, _) = format("title: é\nid: ü\nupdated: 2026-01-02\n").unwrap();
        assert_eq!(out, "id: ü\ntitle: é\nupdated: 2026-01-02T00:00:00Z\n");
    }

    #[test]
    fn comments_after_rewritten_scalars_stay() {
        assert_eq!(
            fmt("id: a\nupdated: 2026-08-01  # day only\ntags:\n  - no # really\n"),
            "id: a\nupdated: 2026-08-01T00:00:00Z  # day only\ntags:\n  - \"no\" # really\n"
        );
    }

    #[test]
    fn keys_and_tagged_scalars_are_not_quoted() {
        assert_eq!(fmt("id: a\nno: !!str no\n"), "id: a\nno: !!str no\n");
    }
}
