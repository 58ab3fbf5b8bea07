//! Splits Markdown front matter from the body.
//!
//! Done by hand (not by a front-matter crate) so the YAML keeps its exact
//! text and the caller knows on which line it starts: every YAML error can
//! then be reported at the right line of the Markdown file. Zero-copy.

/// A Markdown document split into its YAML front matter and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML between the fences, if the document starts with a `---` fence.
    pub yaml: Option<&'a str>,
    /// 1-based line of the first YAML line in the original file.
    pub yaml_line: u32,
    /// The Markdown body after the closing fence (the whole text when there is no front matter).
    pub body: &'a str,
}

/// A malformed front matter block (only: an opening fence that is never closed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitError {
    pub message: String,
    pub line: u32,
}

impl std::fmt::Display for SplitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.line, self.message)
    }
}

impl std::error::Error for SplitError {}

/// Split `src` into front matter and body.
///
/// Front matter exists only when the first line (after an optional UTF-8
/// BOM) is exactly `---`, give or take trailing spaces, tabs and `\r`. It
/// ends at the next line that is exactly `---` or `...` (same tolerance).
/// A `---` anywhere else is ordinary Markdown (e.g. a horizontal rule).
pub fn split(src: &str) -> Result<Split<'_>, SplitError> {
    let text = src.strip_prefix('\u{feff}').unwrap_or(src);
    let no_front_matter = Split {
        yaml: None,
        yaml_line: 1,
        body: text,
    };
    let (first, mut pos) = line_at(text, 0);
    if !is_fence(first, false) {
        return Ok(no_front_matter);
    }
    let yaml_start = pos;
    while pos < text.len() {
        let (line, next) = line_at(text, pos);
        if is_fence(line, true) {
            return Ok(Split {
                yaml: Some(&text[yaml_start..pos]),
                yaml_line: 2,
                body: &text[next..],
            });
        }
        pos = next;
    }
    Err(SplitError {
        message: "unterminated front matter: no closing `---` fence".to_string(),
        line: 1,
    })
}

/// The line starting at byte `start` (without its `\n`) and the offset of the
/// line after it.
fn line_at(text: &str, start: usize) -> (&str, usize) {
    match text[start..].find('\n') {
        Some(i) => (&text[start..start + i], start + i + 1),
        None => (&text[start..], text.len()),
    }
}

/// Whether `line` is a `---` fence (or, when closing, a `...` fence).
fn is_fence(line: &str, closing: bool) -> bool {
    // Cheap first-byte test: nearly every YAML line fails it.
    if !(line.starts_with("---") || closing && line.starts_with("...")) {
        return false;
    }
    line.trim_end_matches([' ', '\t', '\r']).len() == 3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(src: &str) -> (Option<&str>, u32, &str) {
        let s = split(src).unwrap();
        (s.yaml, s.yaml_line, s.body)
    }

    #[test]
    fn normal() {
        let src = "---\nid: a\ntitle: T\n---\n# Body\n\ntext\n";
        assert_eq!(fm(src), (Some("id: a\ntitle: T\n"), 2, "# Body\n\ntext\n"));
    }

    #[test]
    fn crlf() {
        let src = "---\r\nid: a\r\n---\r\nbody\r\n";
        assert_eq!(fm(src), (Some("id: a\r\n"), 2, "body\r\n"));
        assert_eq!(crate::yaml::parse("id: a\r\n").unwrap()["id"], "a");
    }

    #[test]
    fn bom() {
        let src = "\u{feff}---\nid: a\n---\nbody";
        assert_eq!(fm(src), (Some("id: a\n"), 2, "body"));
        assert_eq!(fm("\u{feff}just text"), (None, 1, "just text"));
    }

    #[test]
    fn empty_front_matter() {
        assert_eq!(fm("---\n---\nbody"), (Some(""), 2, "body"));
        assert_eq!(fm("---\n---"), (Some(""), 2, ""));
    }

    #[test]
    fn dots_close_and_trailing_whitespace() {
        assert_eq!(fm("---  \t\na: 1\n...\nbody"), (Some("a: 1\n"), 2, "body"));
        assert_eq!(fm("---\na: 1\n--- \t\r\nbody"), (Some("a: 1\n"), 2, "body"));
        // `...` does not open front matter.
        assert_eq!(fm("...\na: 1\n...\n"), (None, 1, "...\na: 1\n...\n"));
    }

    #[test]
    fn fence_must_be_exact() {
        assert_eq!(fm("----\na\n---\n").0, None);
        assert_eq!(fm(" ---\na\n---\n").0, None);
        // `----` and `--- x` inside do not close it.
        assert_eq!(
            fm("---\na: ----\n--- x\n---\nb").0,
            Some("a: ----\n--- x\n")
        );
    }

    #[test]
    fn no_front_matter() {
        assert_eq!(fm("# Title\n\ntext"), (None, 1, "# Title\n\ntext"));
        assert_eq!(fm(""), (None, 1, ""));
    }

    #[test]
    fn unterminated() {
        for src in [
            "---\nid: a\nbody without fence\n",
            "---",
            "---\n",
            "---\r\n",
        ] {
            let e = split(src).unwrap_err();
            assert_eq!(e.line, 1, "{src:?}");
            assert_eq!(
                e.message,
                "unterminated front matter: no closing `---` fence"
            );
        }
    }

    #[test]
    fn fence_later_in_body_is_not_front_matter() {
        let src = "# Title\n---\nnot: yaml\n---\n";
        assert_eq!(fm(src), (None, 1, src));
        assert_eq!(fm("\n---\na: 1\n---\n").0, None);
    }

    #[test]
    fn horizontal_rules_in_body() {
        let src = "---\na: 1\n---\nintro\n\n---\n\nmore\n---\n";
        assert_eq!(fm(src), (Some("a: 1\n"), 2, "intro\n\n---\n\nmore\n---\n"));
    }
}
