//! Plain-language hints for the YAML mistakes people make most, put on the line
//! that holds the mistake (parsers often notice it a line or two later):
//! an unquoted value containing `: `, a tab used as indentation, and Markdown front
//! matter that lost its opening `---`.

/// A better reading of a parse error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// 1-based line and column in the parsed text.
    pub line: u32,
    pub column: u32,
    /// What is wrong, in plain words.
    pub message: String,
    /// The field the line sets, when it sets one.
    pub field: Option<String>,
    pub fix: String,
}

/// The first line indented with a tab: (line, column of the tab), 1-based.
fn tab_indent(doc: &str) -> Option<(u32, u32)> {
    doc.lines().enumerate().find_map(|(i, l)| {
        let indent = &l[..l.len() - l.trim_start_matches([' ', '\t']).len()];
        indent
            .find('\t')
            .filter(|_| !l.trim().is_empty())
            .map(|c| (i as u32 + 1, c as u32 + 1))
    })
}

/// `key: value` where the plain (unquoted) value itself holds `: `.
fn colon_in_value(line: &str) -> Option<(String, String, u32)> {
    let trimmed = line.trim_start();
    let body = trimmed.strip_prefix("- ").unwrap_or(trimmed);
    if body.starts_with('#') {
        return None;
    }
    let (key, value) = body.split_once(": ")?;
    let value = value.trim();
    if key.is_empty()
        || key.contains(['"', '\'', '{', '[', '#'])
        || value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!'])
        || !value.contains(": ")
    {
        return None;
    }
    // Column of the value in the original line (1-based).
    let column = line.find(value).map_or(1, |c| c as u32 + 1);
    Some((key.trim().to_string(), value.to_string(), column))
}

/// A hint for a YAML parse error in `doc` reported at `line` (1-based), or None
/// when none of the known mistakes is present.
pub fn yaml_error(doc: &str, line: u32) -> Option<Hint> {
    if let Some((l, c)) = tab_indent(doc) {
        return Some(Hint {
            line: l,
            column: c,
            message: "a tab is used for indentation; YAML indents with spaces only".into(),
            field: None,
            fix: "replace the tab at the start of this line with spaces (and set your editor to indent YAML with spaces)".into(),
        });
    }
    let lines: Vec<&str> = doc.lines().collect();
    // The reported line first, then the ones before it (the parser may notice late).
    let start = (line as usize).min(lines.len());
    let order = (0..start).rev().chain(start..lines.len());
    for i in order {
        if let Some((key, value, column)) = colon_in_value(lines[i]) {
            let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
            return Some(Hint {
                line: i as u32 + 1,
                column,
                message: format!(
                    "the value of `{key}` contains `: `, which YAML reads as the start of another mapping"
                ),
                field: Some(key.clone()),
                fix: format!("quote the value: {key}: \"{escaped}\""),
            });
        }
    }
    None
}

/// A Markdown file with no front matter whose first lines read like front matter and
/// are closed by a `---` line: the opening `---` is missing, so the fields became
/// body text and the object took every default. Returns the line of that `---`.
pub fn missing_opening_fence(text: &str) -> Option<u32> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate();
    let (_, first) = lines.next()?;
    let looks_like_field = |l: &str| {
        l.split_once(':').is_some_and(|(k, _)| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
    };
    if !looks_like_field(first.trim_end()) {
        return None;
    }
    for (i, l) in lines.take(200) {
        let t = l.trim_end();
        if t == "---" {
            return Some(i as u32 + 1);
        }
        if !(t.is_empty() || t.starts_with([' ', '-', '#']) || looks_like_field(t)) {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colon_in_a_plain_value() {
        let doc = "id: a\ntitle: Refunds: the policy\nowner: x\n";
        let h = yaml_error(doc, 3).unwrap();
        assert_eq!((h.line, h.field.as_deref()), (2, Some("title")));
        assert_eq!(h.fix, "quote the value: title: \"Refunds: the policy\"");
        assert!(yaml_error("title: \"a: b\"\n", 1).is_none());
    }

    #[test]
    fn tabs_are_found_on_their_line() {
        let h = yaml_error("a:\n  b: 1\n\tc: 2\n", 2).unwrap();
        assert_eq!((h.line, h.column), (3, 1));
    }

    #[test]
    fn front_matter_without_its_opening_fence() {
        assert_eq!(
            missing_opening_fence("id: a\ntitle: T\n---\n# Body\n"),
            Some(3)
        );
        assert_eq!(missing_opening_fence("# Title\n\ntext\n---\n"), None);
        assert_eq!(
            missing_opening_fence("Note: text\nmore prose here.\n---\n"),
            None
        );
    }
}
