//! A fast path for the plain block YAML that front matter almost always is.
//!
//! saphyr's scanner alone costs more than the whole parse budget on the
//! 100k-file benchmark, so the common shape — block mappings and sequences
//! of one-line plain / quoted scalars, `[a, b]` lists of plain words and `|`
//! literal blocks — is read here by a line-oriented scanner.
//!
//! The contract is one-sided: this returns `Some(v)` only when it is certain
//! that the event-based parser would produce exactly `Ok(v)`. Anything
//! unusual (comments, anchors, tags, multi-line plain scalars, escapes other
//! than JSON's, duplicate keys, scalars that would be errors, …) returns
//! `None`, and the caller re-parses with the event-based path, which also
//! produces every error message. The fuzz target checks this contract by
//! comparing both paths on every input the fast path accepts.
use super::{scalar, MAX_DEPTH};
use serde_json::{Map, Value};

pub(crate) fn parse(src: &str) -> Option<Value> {
    // Block scalars' final line break (clip chomping) is only simple to get
    // right when every line ends with one.
    if !src.ends_with('\n') {
        return None;
    }
    let mut f = Fast {
        src,
        pos: 0,
        cur: None,
        bail: false,
    };
    match f.peek() {
        Some(line) if line.indent == 0 => {}
        _ => return None,
    }
    let map = f.map(0, 1)?;
    if f.peek().is_some() || f.bail {
        return None;
    }
    Some(Value::Object(map))
}

/// A non-empty line: its indentation (spaces) and the text after it.
#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    text: &'a str,
}

struct Fast<'a> {
    src: &'a str,
    /// Start of the first line not yet consumed (after `cur`, if any).
    pos: usize,
    /// The current, peeked line.
    cur: Option<Line<'a>>,
    /// Set when a line is outside the subset; every `peek` then reports end
    /// of input so the recursion unwinds, and `parse` returns `None`.
    bail: bool,
}

impl<'a> Fast<'a> {
    /// The next non-empty line, or `None` at end of input (or after bailing).
    fn peek(&mut self) -> Option<Line<'a>> {
        if self.bail {
            return None;
        }
        if self.cur.is_some() {
            return self.cur;
        }
        while self.pos < self.src.len() {
            let rest = &self.src[self.pos..];
            let end = rest.find('\n').unwrap_or(rest.len());
            let line = &rest[..end];
            self.pos += (end + 1).min(rest.len());
            if line.is_empty() {
                continue;
            }
            let indent = line.bytes().take_while(|&b| b == b' ').count();
            let text = &line[indent..];
            let bad = match text.as_bytes().first() {
                // Whitespace-only lines, comments and tabs are left to saphyr.
                None | Some(b'#' | b'\t') => true,
                Some(b'-' | b'.') if indent == 0 => {
                    text.starts_with("---") || text.starts_with("...")
                }
                Some(b'%') => true,
                _ => false,
            };
            if bad {
                self.bail = true;
                return None;
            }
            self.cur = Some(Line { indent, text });
            return self.cur;
        }
        None
    }

    fn consume(&mut self) {
        self.cur = None;
    }

    fn fail<T>(&mut self) -> Option<T> {
        self.bail = true;
        None
    }

    /// A block mapping whose keys sit at column `n`.
    fn map(&mut self, n: usize, depth: usize) -> Option<Map<String, Value>> {
        if depth > MAX_DEPTH {
            return self.fail();
        }
        let mut map = Map::new();
        while let Some(line) = self.peek() {
            if line.indent < n {
                break;
            }
            let Some((key, rest)) = key_line(line.text).filter(|_| line.indent == n) else {
                return self.fail();
            };
            if map.contains_key(key) {
                return self.fail();
            }
            self.consume();
            let value = self.value_after_colon(rest, n, depth)?;
            map.insert(key.to_owned(), value);
        }
        Some(map)
    }

    /// The value of a `key:` whose key sits at column `n`; `rest` follows the colon.
    fn value_after_colon(&mut self, rest: &'a str, n: usize, depth: usize) -> Option<Value> {
        let v = rest.trim_matches(' ');
        if v.is_empty() {
            return self.nested(n, depth);
        }
        if v == "|" {
            return self.literal(n).map(Value::String);
        }
        match inline(v) {
            Some(value) => Some(value),
            None => self.fail(),
        }
    }

    /// The block node under a `key:` with nothing after the colon.
    fn nested(&mut self, n: usize, depth: usize) -> Option<Value> {
        let Some(line) = self.peek() else {
            return Some(Value::Null);
        };
        let is_seq = line.text.starts_with("- ") || line.text == "-";
        if line.indent > n {
            if is_seq {
                self.seq(line.indent, depth + 1).map(Value::Array)
            } else {
                self.map(line.indent, depth + 1).map(Value::Object)
            }
        } else if line.indent == n && is_seq {
            // An "indentless" sequence: valid YAML, but left to saphyr.
            self.fail()
        } else {
            Some(Value::Null)
        }
    }

    /// A block sequence whose `-` indicators sit at column `m`.
    fn seq(&mut self, m: usize, depth: usize) -> Option<Vec<Value>> {
        if depth > MAX_DEPTH {
            return self.fail();
        }
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent < m {
                break;
            }
            let Some(after) = line.text.strip_prefix("- ").filter(|_| line.indent == m) else {
                return self.fail();
            };
            let item = after.trim_start_matches(' ');
            if item.is_empty() {
                return self.fail();
            }
            if key_line(item).is_some() {
                // `- key: value` starts a mapping at the key's column.
                let col = m + line.text.len() - item.len();
                self.cur = Some(Line {
                    indent: col,
                    text: item,
                });
                items.push(Value::Object(self.map(col, depth + 1)?));
            } else {
                self.consume();
                match inline(item.trim_end_matches(' ')) {
                    Some(v) => items.push(v),
                    None => return self.fail(),
                }
            }
        }
        Some(items)
    }

    /// The content of a `|` literal block scalar under a key at column `n`
    /// (clip chomping: one final line break, trailing empty lines dropped).
    fn literal(&mut self, n: usize) -> Option<String> {
        let mut out = String::new();
        let mut block_indent = None;
        let mut empty_lines = 0;
        while self.pos < self.src.len() {
            let rest = &self.src[self.pos..];
            let end = rest.find('\n')?; // `parse` checked the final '\n'
            let line = &rest[..end];
            if line.is_empty() {
                empty_lines += 1;
                self.pos += 1;
                continue;
            }
            let indent = line.bytes().take_while(|&b| b == b' ').count();
            if indent == line.len() {
                return self.fail();
            }
            let bi = *block_indent.get_or_insert(indent);
            if indent <= n || indent < bi {
                break;
            }
            let content = &line[bi..];
            let printable = |b: u8| (b >= 0x20 && b != 0x7f) || b == b'\t';
            if !content.bytes().all(printable) || !printable_non_ascii(content) {
                return self.fail();
            }
            for _ in 0..empty_lines {
                out.push('\n');
            }
            empty_lines = 0;
            out.push_str(content);
            out.push('\n');
            self.pos += end + 1;
        }
        Some(out)
    }
}

/// `key: …` or `key:` with a plain-word key; returns the key and what
/// follows the colon. Null-like keys are refused (they are errors).
fn key_line(text: &str) -> Option<(&str, &str)> {
    let b = text.as_bytes();
    if !b.first()?.is_ascii_alphanumeric() {
        return None;
    }
    let len = b
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/')))?;
    if b[len] != b':' || !matches!(b.get(len + 1), None | Some(b' ')) {
        return None;
    }
    let key = &text[..len];
    if scalar::is_null(key) {
        return None;
    }
    Some((key, &text[len + 1..]))
}

/// A one-line scalar or flow collection, already trimmed of spaces.
fn inline(v: &str) -> Option<Value> {
    match *v.as_bytes().first()? {
        b'"' => double_quoted(v).map(Value::String),
        b'\'' => single_quoted(v).map(Value::String),
        b'[' => flow_words(v),
        b'{' => (v == "{}").then(|| Value::Object(Map::new())),
        _ => plain(v),
    }
}

/// A one-line plain scalar, resolved by the same core-schema code as the
/// event path. Only a conservative character set is accepted.
fn plain(v: &str) -> Option<Value> {
    let b = v.as_bytes();
    let start_ok = match b[0] {
        c if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 => true,
        b'-' | b'+' | b'.' => b.get(1).is_some_and(u8::is_ascii_alphanumeric),
        _ => false,
    };
    if !start_ok || b[b.len() - 1] == b':' {
        return None;
    }
    for (i, &c) in b.iter().enumerate() {
        match c {
            0..=0x1f | 0x7f | b'[' | b']' | b'{' | b'}' => return None,
            b'#' if b[i - 1] == b' ' => return None,
            b':' if b[i + 1] == b' ' => return None,
            _ => {}
        }
    }
    if !printable_non_ascii(v) {
        return None;
    }
    scalar::resolve_plain(v.to_owned()).ok()
}

/// Rejects the non-ASCII characters YAML treats specially or forbids: C1
/// controls (incl. NEL), the BOM, U+FFFE/U+FFFF and the Unicode line and
/// paragraph separators. Works on UTF-8 bytes without decoding.
fn printable_non_ascii(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_ascii() {
        return true;
    }
    b.windows(2)
        .all(|w| !(w[0] == 0xC2 && (0x80..=0x9F).contains(&w[1])))
        && !s.contains(['\u{feff}', '\u{fffe}', '\u{ffff}', '\u{2028}', '\u{2029}'])
}

/// Characters allowed raw inside our quoted strings.
fn quoted_char_ok(c: u8) -> bool {
    c >= 0x20 && c != 0x7f
}

/// A complete one-line `"…"` with at most JSON's escapes.
fn double_quoted(v: &str) -> Option<String> {
    let b = v.as_bytes();
    let mut out = String::new();
    let mut i = 1;
    let mut run = 1; // start of the pending unescaped run
    while i < b.len() {
        match b[i] {
            b'"' => {
                if i + 1 != b.len() {
                    return None;
                }
                out.push_str(&v[run..i]);
                return printable_non_ascii(&out).then_some(out);
            }
            b'\\' => {
                out.push_str(&v[run..i]);
                let esc = *b.get(i + 1)?;
                i += 2;
                out.push(match esc {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        let hex = v.get(i..i + 4)?;
                        if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                            return None;
                        }
                        i += 4;
                        // Surrogates (and so pairs) are left to saphyr.
                        char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
                    }
                    _ => return None,
                });
                run = i;
            }
            c if quoted_char_ok(c) => i += 1,
            _ => return None,
        }
    }
    None
}

/// A complete one-line `'…'` (`''` is a quote).
fn single_quoted(v: &str) -> Option<String> {
    let b = v.as_bytes();
    let mut out = String::new();
    let mut i = 1;
    let mut run = 1;
    while i < b.len() {
        match b[i] {
            b'\'' if b.get(i + 1) == Some(&b'\'') => {
                out.push_str(&v[run..=i]);
                i += 2;
                run = i;
            }
            b'\'' => {
                if i + 1 != b.len() {
                    return None;
                }
                out.push_str(&v[run..i]);
                return printable_non_ascii(&out).then_some(out);
            }
            c if quoted_char_ok(c) => i += 1,
            _ => return None,
        }
    }
    None
}

/// `[word, word]` where every word is a plain token (`[A-Za-z0-9][A-Za-z0-9._@/-]*`).
fn flow_words(v: &str) -> Option<Value> {
    let inner = v.strip_prefix('[')?.strip_suffix(']')?;
    let mut items = Vec::new();
    if inner.trim_matches(' ').is_empty() {
        return Some(Value::Array(items));
    }
    for word in inner.split(',') {
        let word = word.trim_matches(' ');
        let b = word.as_bytes();
        if !b.first()?.is_ascii_alphanumeric()
            || !b.iter().all(|&c| {
                c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'@' | b'/' | b'-')
            })
        {
            return None;
        }
        items.push(scalar::resolve_plain(word.to_owned()).ok()?);
    }
    Some(Value::Array(items))
}
