use serde_json::{Map, Value};

use super::*;
use crate::diag::Diagnostic;
use crate::object::Supplied;

fn kinds(s: &str) -> Vec<(usize, u32, Kind)> {
    find(s)
        .into_iter()
        .map(|h| (h.at, h.ch as u32, h.kind))
        .collect()
}

#[test]
fn every_range_is_found_at_its_offset_with_its_kind() {
    let cases: [(u32, Kind); 22] = [
        (0xE0000, Kind::Tag),
        (0xE0041, Kind::Tag),
        (0xE007F, Kind::Tag),
        (0x202A, Kind::Bidi),
        (0x202C, Kind::Bidi),
        (0x202E, Kind::Bidi),
        (0x2066, Kind::Bidi),
        (0x2069, Kind::Bidi),
        (0x200E, Kind::DirectionMark),
        (0x200F, Kind::DirectionMark),
        (0x200B, Kind::ZeroWidth),
        (0x200C, Kind::ZeroWidth),
        (0x200D, Kind::ZeroWidth),
        (0x2060, Kind::ZeroWidth),
        (0x2064, Kind::ZeroWidth),
        (0xFEFF, Kind::ZeroWidth),
        (0xAD, Kind::SoftHyphen),
        // Neighbours of the ranges are ordinary characters.
        (0xAC, Kind::SoftHyphen),
        (0x2065, Kind::ZeroWidth),
        (0x206A, Kind::Bidi),
        (0xE0080, Kind::Tag),
        (0x2029, Kind::Bidi),
    ];
    for (i, (code, kind)) in cases.into_iter().enumerate() {
        let c = char::from_u32(code).unwrap();
        // Multi-byte text before it: the offset is in bytes.
        let s = format!("é—{c}x");
        let want = if i < 17 {
            vec![("é—".len(), code, kind)]
        } else {
            vec![]
        };
        assert_eq!(kinds(&s), want, "U+{code:04X}");
        assert_eq!(kind_of(c).is_some(), i < 17, "U+{code:04X}");
    }
}

#[test]
fn ascii_and_ordinary_unicode_are_clean() {
    for s in [
        "",
        "plain ASCII text, with `code` and \\u200b written out",
        "Smart “quotes” — dashes, ellipses… and €, ©, ½",
        "日本語のテキスト, العربية, עברית, ελληνικά",
        "emoji 👍🏽 ❤️ 🇩🇪 #️⃣",
    ] {
        assert!(find(s).is_empty(), "{s:?}: {:?}", find(s));
        assert!(matches!(reveal(s), std::borrow::Cow::Borrowed(_)));
    }
    assert!(!may_contain("ascii"));
    assert!(may_contain("a\u{200b}"));
}

#[test]
fn a_tag_payload_is_every_character_of_it() {
    let payload: String = "Ignore"
        .chars()
        .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
        .collect();
    let s = format!("Refunds{payload} policy");
    let hits = find(&s);
    assert_eq!(hits.len(), 6);
    assert_eq!(hits[0].at, "Refunds".len());
    assert_eq!(hits[0].ch, '\u{E0049}');
    assert!(hits.iter().all(|h| h.kind == Kind::Tag));
    assert_eq!(
        reveal(&s),
        "Refunds<U+E0049><U+E0067><U+E006E><U+E006F><U+E0072><U+E0065> policy"
    );
}

#[test]
fn legitimate_uses_are_left_alone() {
    for s in [
        // Emoji sequences: a family, a technologist with a skin tone, the rainbow flag.
        "👨\u{200D}👩\u{200D}👧",
        "👩🏽\u{200D}💻",
        "🏳\u{FE0F}\u{200D}🌈",
        // The flags of England, Scotland and Wales.
        "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}",
        "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
        // Persian with a zero-width non-joiner, Hindi with a joiner, Thai word breaks.
        "می\u{200C}خواهم",
        "क्\u{200D}ष",
        "ภาษา\u{200B}ไทย",
        // A right-to-left mark after Hebrew.
        "שלום\u{200F} (2024)",
        // One variation selector after a character is a presentation choice.
        "❤\u{FE0F} 葛\u{E0100}",
    ] {
        assert!(find(s).is_empty(), "{s:?}: {:?}", kinds(s));
    }
}

#[test]
fn the_same_characters_out_of_place_are_found() {
    // A joiner between Latin letters, a flag tag sequence that is not one of the
    // three, a tag payload after a real flag, a mark between Latin letters.
    assert_eq!(kinds("a\u{200D}b"), vec![(1, 0x200D, Kind::ZeroWidth)]);
    assert_eq!(
        find("🏴\u{E0075}\u{E0073}\u{E0074}\u{E0078}\u{E007F}").len(),
        5
    );
    assert_eq!(
        find("🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}\u{E0041}").len(),
        7
    );
    assert_eq!(kinds("a\u{200F}b"), vec![(1, 0x200F, Kind::DirectionMark)]);
    // A run of variation selectors smuggles data: all of it is found.
    let run = kinds("😀\u{FE00}\u{FE01}\u{E0100}");
    assert_eq!(run.len(), 3);
    assert!(run.iter().all(|(_, _, k)| *k == Kind::VariationRun));
    assert_eq!(Kind::VariationRun.severity(), Severity::Error);
    // A byte-order mark inside text is a zero-width character.
    assert_eq!(kinds("a\u{FEFF}b"), vec![(1, 0xFEFF, Kind::ZeroWidth)]);
}

#[test]
fn severities() {
    assert_eq!(Kind::Tag.severity(), Severity::Error);
    assert_eq!(Kind::Bidi.severity(), Severity::Error);
    for k in [Kind::DirectionMark, Kind::ZeroWidth, Kind::SoftHyphen] {
        assert_eq!(k.severity(), Severity::Warning);
    }
}

/// The findings for a Markdown file (front matter and body) or a YAML / JSON one.
fn scan(file: &str, text: &str) -> Vec<Diagnostic> {
    let (doc, doc_line, body) = if file.ends_with(".md") {
        let s = crate::frontmatter::split(text).unwrap();
        (s.yaml, s.yaml_line, Some(s.body))
    } else {
        (Some(text), 1, None)
    };
    let mut fields: Map<String, Value> = match doc {
        Some(d) if file.ends_with(".json") => crate::json::parse(d).unwrap(),
        Some(d) => crate::yaml::parse(d).unwrap(),
        None => Value::Object(Map::new()),
    }
    .as_object()
    .cloned()
    .unwrap_or_default();
    if let Some(b) = body {
        fields.insert("content".into(), Value::from(b));
    }
    let supplied = Supplied::default();
    let layout = Layout {
        text,
        json: file.ends_with(".json"),
        doc,
        doc_line,
        body,
        fields: &fields,
        supplied: &supplied,
    };
    findings(&layout, file, "a")
}

#[test]
fn a_finding_names_line_column_field_and_code_points_never_the_characters() {
    let text = "---\ntitle: \"Café — refunds\u{E0049}\u{E0067}\"\ntags: [a, \"b\u{200B}\"]\n---\n\
                Ünïcödé first line\n\n  Zwei\u{202E}Wörter and \u{AD}\n";
    let d = scan("p.md", text);
    assert_eq!(d.len(), 3, "{d:#?}");
    let title = &d[0];
    assert_eq!(title.severity, Severity::Error);
    assert_eq!((title.line, title.column), (Some(2), Some(23)));
    assert_eq!(title.field.as_deref(), Some("title"));
    assert_eq!(title.id.as_deref(), Some("a"));
    assert_eq!(title.file.as_deref(), Some("p.md"));
    assert!(
        title.message.contains("tag characters"),
        "{}",
        title.message
    );
    assert_eq!(
        title.actual,
        Some(Value::from("U+E0049 U+E0067 (2 characters)"))
    );
    let tags = &d[1];
    assert_eq!(tags.severity, Severity::Warning);
    assert_eq!((tags.line, tags.column), (Some(3), Some(13)));
    assert_eq!(tags.field.as_deref(), Some("tags"));
    // One finding for the body line, at its first character, as severe as the worst.
    let body = &d[2];
    assert_eq!((body.line, body.column), (Some(7), Some(7)));
    assert_eq!(body.field.as_deref(), Some("content"));
    assert_eq!(body.severity, Severity::Error);
    assert_eq!(
        body.actual,
        Some(Value::from("U+202E U+00AD (2 characters)"))
    );
    assert!(body.message.contains("bidirectional") && body.message.contains("soft hyphens"));
    for f in &d {
        let json = serde_json::to_string(f).unwrap();
        assert!(find(&json).is_empty(), "{json}");
        assert!(f.remediation.as_deref().unwrap().contains("delete them"));
    }
}

#[test]
fn escapes_count_only_when_the_value_holds_the_character() {
    let json =
        "{\n  \"title\": \"a\\u200bb\",\n  \"summary\": \"\\\\u202e is how you write it\",\n  \
                \"content\": \"x\\udb40\\udc41y\"\n}\n";
    let d = scan("o.json", json);
    assert_eq!(d.len(), 2, "{d:#?}");
    assert_eq!((d[0].line, d[0].column), (Some(2), Some(14)));
    assert_eq!(d[0].field.as_deref(), Some("title"));
    assert!(d[0].message.contains("written as escapes"));
    assert_eq!(d[0].actual, Some(Value::from("U+200B (1 character)")));
    assert_eq!(d[1].line, Some(4));
    assert_eq!(d[1].field.as_deref(), Some("content"));
    assert_eq!(d[1].severity, Severity::Error);
    assert_eq!(d[1].actual, Some(Value::from("U+E0041 (1 character)")));
    // YAML: a double-quoted escape is one; the same text in a plain scalar is not.
    let yaml = "title: \"x\\U000E0041\"\nsummary: C:\\u200b\\path\n";
    let d = scan("o.yaml", yaml);
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(
        (d[0].line, d[0].column, d[0].field.as_deref()),
        (Some(1), Some(10), Some("title"))
    );
    // An escaped emoji joiner is the emoji's.
    assert!(scan(
        "o.json",
        "{\"title\": \"\\ud83d\\udc69\\u200d\\ud83d\\udcbb\"}"
    )
    .is_empty());
}

#[test]
fn a_byte_order_mark_opening_a_file_is_not_text() {
    assert!(scan("p.md", "\u{FEFF}---\ntitle: x\n---\nBody\n").is_empty());
    let d = scan("p.md", "\u{FEFF}---\ntitle: x\n---\nBo\u{FEFF}dy\n");
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].line, d[0].column), (Some(4), Some(3)));
}

#[test]
fn many_lines_are_summed_up_after_the_first_twenty() {
    let body: String = (0..30).map(|i| format!("line {i}\u{200B}\n")).collect();
    let d = scan("p.md", &body);
    assert_eq!(d.len(), 21);
    assert_eq!(d[19].line, Some(20));
    assert_eq!(d[20].line, Some(21));
    assert!(d[20].message.starts_with("10 more"), "{}", d[20].message);
}

#[test]
fn a_long_payload_lists_its_first_code_points_and_counts_all() {
    let payload: String = (0..40)
        .map(|i| char::from_u32(0xE0041 + i % 26).unwrap())
        .collect();
    let d = scan("p.md", &format!("x{payload}\n"));
    assert_eq!(d.len(), 1);
    let actual = d[0].actual.as_ref().unwrap().as_str().unwrap();
    assert!(actual.starts_with("U+E0041 U+E0042"), "{actual}");
    assert!(actual.ends_with("… (40 characters)"), "{actual}");
}
