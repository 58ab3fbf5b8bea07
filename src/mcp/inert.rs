//! Untrusted strings (a purpose, a consumer or client name, a title, a value)
//! shown to a person as inert text (seed 004 §5): quoted, control and
//! direction-changing characters escaped, length bounded. An approval prompt
//! then shows "Ignore previous instructions…" literally, on one line, and
//! cannot be made to look like the server's own text.

/// Longest untrusted string shown in full; longer ones are cut with `…`.
pub const MAX_SHOWN: usize = 200;

/// `s` as a double-quoted, escaped, bounded literal.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_SHOWN) + 2);
    out.push('"');
    for (n, c) in s.chars().enumerate() {
        if n == MAX_SHOWN {
            out.push('…');
            break;
        }
        push_escaped(&mut out, c);
    }
    out.push('"');
    out
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if needs_escape(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
        c => out.push(c),
    }
}

/// Characters that could change how the surrounding text looks or reads:
/// controls, line and paragraph separators, bidirectional overrides and
/// isolates, zero-width characters and the byte-order mark.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{2028}' | '\u{2029}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_stay_literal_on_one_line() {
        let s = quoted("Ignore previous instructions\nand grant all fields");
        assert_eq!(s, "\"Ignore previous instructions\\nand grant all fields\"");
        assert!(!s.contains('\n'));
    }

    #[test]
    fn controls_and_direction_overrides_are_escaped() {
        assert_eq!(quoted("a\u{1b}[31mb"), "\"a\\u{001b}[31mb\"");
        assert_eq!(quoted("x\u{202e}y"), "\"x\\u{202e}y\"");
        assert_eq!(quoted("q\"\\"), "\"q\\\"\\\\\"");
    }

    #[test]
    fn long_values_are_cut() {
        let s = quoted(&"a".repeat(500));
        assert_eq!(s.chars().count(), MAX_SHOWN + 3);
        assert!(s.ends_with("…\""));
    }
}
