use super::{locate, parse, PathSeg, YamlError, MAX_DEPTH};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn ok(src: &str) -> Value {
    parse(src).unwrap_or_else(|e| panic!("{src:?}: {e}"))
}

fn err(src: &str) -> YamlError {
    match parse(src) {
        Ok(v) => panic!("{src:?} parsed as {v}"),
        Err(e) => e,
    }
}

/// The value of `v: <scalar>`.
fn scalar(s: &str) -> Value {
    ok(&format!("v: {s}\n"))["v"].clone()
}

#[test]
fn core_schema_scalars() {
    for s in ["null", "Null", "NULL", "~", ""] {
        assert_eq!(scalar(s), Value::Null, "{s}");
    }
    for (s, b) in [
        ("true", true),
        ("True", true),
        ("TRUE", true),
        ("false", false),
    ] {
        assert_eq!(scalar(s), json!(b));
    }
    assert_eq!(scalar("FALSE"), json!(false));
    assert_eq!(scalar("False"), json!(false));
    assert_eq!(scalar("42"), json!(42));
    assert_eq!(scalar("-17"), json!(-17));
    assert_eq!(scalar("+5"), json!(5));
    assert_eq!(scalar("007"), json!(7));
    assert_eq!(scalar("0o17"), json!(15));
    assert_eq!(scalar("0x1F"), json!(31));
    assert_eq!(scalar("0xff"), json!(255));
    assert_eq!(scalar("18446744073709551615"), json!(u64::MAX));
    assert_eq!(scalar("-9223372036854775808"), json!(i64::MIN));
    assert_eq!(scalar("1.0"), json!(1.0));
    assert!(scalar("1.0").is_f64());
    assert_eq!(scalar("-0.5"), json!(-0.5));
    assert_eq!(scalar(".5"), json!(0.5));
    assert_eq!(scalar("1."), json!(1.0));
    assert_eq!(scalar("1e3"), json!(1000.0));
    assert_eq!(scalar("6.02E+23"), json!(6.02e23));
    assert_eq!(scalar("2.5e-3"), json!(0.0025));
}

#[test]
fn everything_else_is_a_string() {
    for s in [
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "Yes",
        "NO",
        "Off",
        "2026-08-01T00:00:00Z",
        "2026-08-01",
        "1.2.3",
        "0x",
        "0o8",
        "0xZ",
        "1_000",
        "-x",
        ".",
        "+",
        "e3",
        "1e",
        "nulls",
        "truely",
        "0b101",
        "12:30",
        "-0o7",
        "hello world",
        ".Nan",
        "inf",
        "nan",
    ] {
        assert_eq!(scalar(s), json!(s), "{s}");
    }
    assert_eq!(scalar("no # comment"), json!("no"));
}

#[test]
fn quoted_and_block_scalars_are_strings() {
    assert_eq!(scalar("\"true\""), json!("true"));
    assert_eq!(scalar("'123'"), json!("123"));
    assert_eq!(scalar("'null'"), json!("null"));
    assert_eq!(scalar("\"\""), json!(""));
    assert_eq!(scalar("\".inf\""), json!(".inf"));
    assert_eq!(ok("v: |\n  42\n")["v"], json!("42\n"));
    assert_eq!(ok("v: >-\n  true\n")["v"], json!("true"));
}

#[test]
fn inf_and_nan_are_errors() {
    for s in [".inf", "-.inf", "+.INF", ".Inf", ".nan", ".NaN", ".NAN"] {
        let e = err(&format!("a: 1\nv: {s}\n"));
        assert_eq!((e.line, e.column), (2, 4), "{s}");
        assert!(e.message.contains("JSON"), "{}", e.message);
    }
    assert!(err("v: 1e999").message.contains("out of range"));
}

#[test]
fn out_of_range_integers_are_errors() {
    for s in [
        "18446744073709551616",
        "-9223372036854775809",
        "0x10000000000000000",
    ] {
        let e = err(&format!("v: {s}"));
        assert!(e.message.contains("64-bit"), "{}", e.message);
        assert_eq!((e.line, e.column), (1, 4));
    }
}

#[test]
fn core_tags() {
    assert_eq!(scalar("!!str 123"), json!("123"));
    assert_eq!(scalar("!!str true"), json!("true"));
    assert_eq!(scalar("!!str"), json!(""));
    assert_eq!(scalar("!!int \"12\""), json!(12));
    assert_eq!(scalar("!!float 1"), json!(1.0));
    assert_eq!(scalar("!!bool 'true'"), json!(true));
    assert_eq!(scalar("!!null ''"), Value::Null);
    assert_eq!(scalar("!<tag:yaml.org,2002:str> 5"), json!("5"));
    assert_eq!(
        ok("v: !!map {a: 1}\nw: !!seq [1]"),
        json!({"v": {"a": 1}, "w": [1]})
    );
    assert!(err("v: !!int abc").message.contains("invalid !!int"));
    assert!(err("v: !!bool yes").message.contains("invalid !!bool"));
    assert!(err("v: !!map [1]").message.contains("!!map"));
    assert!(err("v: !!seq x").message.contains("!!seq"));
}

#[test]
fn custom_tags_are_errors() {
    let e = err("a: 1\nb: !Ref foo\n");
    assert_eq!((e.line, e.column), (2, 4));
    assert!(e.message.contains("`!Ref`"), "{}", e.message);
    assert!(err("v: !!binary aGVsbG8=").message.contains("`!!binary`"));
    assert!(err("v: !!timestamp 2001-12-14")
        .message
        .contains("`!!timestamp`"));
    assert!(err("v: !!set {a}").message.contains("`!!set`"));
    assert!(err("v: ! x").message.contains("`!`"));
    assert!(err("%TAG !e! tag:example.com,2000:\n---\nv: !e!x 1")
        .message
        .contains("tag:example.com"));
}

#[test]
fn duplicate_keys() {
    let e = err("a: 1\nb: 2\na: 3\n");
    assert_eq!(e.message, "duplicate key `a`");
    assert_eq!((e.line, e.column), (3, 1));

    let e = err("top:\n  x: 1\n  y: 2\n  x: 3\nother: 1\n");
    assert_eq!(e.message, "duplicate key `x`");
    assert_eq!((e.line, e.column), (4, 3));

    let e = err("- {a: 1, b: 2, a: 3}");
    assert_eq!((e.line, e.column), (1, 16));
    // Different spellings of the same key text collide too.
    assert_eq!(err("a: 1\n'a': 2").line, 2);
    // Same key in sibling mappings is fine.
    assert_eq!(
        ok("x: {a: 1}\ny: {a: 2}"),
        json!({"x": {"a": 1}, "y": {"a": 2}})
    );
}

#[test]
fn keys() {
    assert_eq!(
        ok("1: a\ntrue: b\n1.5: c\n0x1F: d"),
        json!({"1": "a", "true": "b", "1.5": "c", "0x1F": "d"})
    );
    assert_eq!(ok("<<: {a: 1}\nb: 2"), json!({"<<": {"a": 1}, "b": 2}));
    assert_eq!(ok("'null': 1\n\"~\": 2"), json!({"null": 1, "~": 2}));
    for src in ["~: a", "null: a", ": a", "? \n: a", "!!null ~: 1", "{: a}"] {
        assert!(err(src).message.contains("null mapping key"), "{src}");
    }
    let e = err("a: 1\n? [x]\n: 2");
    assert!(e
        .message
        .contains("sequence cannot be used as a mapping key"));
    assert_eq!(e.line, 2);
    assert!(err("? {x: 1}\n: 2")
        .message
        .contains("mapping cannot be used"));
    assert!(err("!!null x: 1").message.contains("invalid !!null"));
    assert!(err("!Foo a: 1").message.contains("`!Foo`"));
}

#[test]
fn key_order_is_preserved() {
    let v = ok("zeta: 1\nalpha: 2\nmid: {z: 1, a: 2}\n");
    let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["zeta", "alpha", "mid"]);
    let inner: Vec<_> = v["mid"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(inner, ["z", "a"]);
}

#[test]
fn nested_structures() {
    let src = "id: x\nsources:\n  - uri: \"git://a\"\n    type: api\n  - b\nempty_list: []\nempty_map: {}\nnested: [[1, 2], {k: v}]\n";
    assert_eq!(
        ok(src),
        json!({"id": "x", "sources": [{"uri": "git://a", "type": "api"}, "b"],
               "empty_list": [], "empty_map": {}, "nested": [[1, 2], {"k": "v"}]})
    );
}

#[test]
fn aliases() {
    assert_eq!(
        ok("a: &x {k: 1}\nb: *x\nc: &s hi\nd: *s"),
        json!({"a": {"k": 1}, "b": {"k": 1}, "c": "hi", "d": "hi"})
    );
    // A scalar anchor can be reused as a key.
    assert_eq!(ok("a: &k name\n*k : 2"), json!({"a": "name", "name": 2}));
    assert_eq!(ok("&k a: 1\nb: *k"), json!({"a": 1, "b": "a"}));
    assert_eq!(err("a: &k x\n*k : 2\nx: 3").message, "duplicate key `x`");
    let e = err("a: 1\nb: *nope\n");
    assert_eq!(e.line, 2);
    assert!(err("a: &x [*x]").message.contains("enclosing"));
    assert!(err("a: &x [1]\n*x : 2")
        .message
        .contains("collection cannot be used"));
}

#[test]
fn alias_bomb_fails_fast() {
    let mut src = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let p = i - 1;
        src.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let start = Instant::now();
    let e = err(&src);
    assert!(
        start.elapsed() < Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.message.contains("alias expansion exceeds"),
        "{}",
        e.message
    );
    assert_eq!(e.line, 4);
    // A modest amount of reuse is fine.
    assert_eq!(
        ok("a: &a [1, 2]\nb: [*a, *a, *a]")["b"],
        json!([[1, 2], [1, 2], [1, 2]])
    );
}

#[test]
fn deep_nesting_is_an_error() {
    let ok_depth = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    ok(&ok_depth);
    let deep = "[".repeat(150) + &"]".repeat(150);
    let e = err(&deep);
    assert!(e.message.contains("deeper than 128"), "{}", e.message);
    assert_eq!((e.line, e.column), (1, 129));
    // Far deeper input is stopped by the scanner's own limit, also without recursion.
    let e = err(&("[".repeat(100_000) + &"]".repeat(100_000)));
    assert!(
        e.message.contains("limit") || e.message.contains("deeper"),
        "{e}"
    );
    let block: String = (0..200)
        .map(|i| format!("{}k:\n", "  ".repeat(i)))
        .collect();
    assert_eq!(err(&block).line, 129);
    // Aliases cannot be used to exceed the depth either.
    let half = "[".repeat(100) + &"]".repeat(100);
    let src =
        format!("a: &x {half}\nb: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[*x]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
    assert!(err(&src).message.contains("deeper than"));
}

#[test]
fn documents() {
    assert_eq!(ok(""), Value::Null);
    assert_eq!(ok("# only a comment\n\n"), Value::Null);
    assert_eq!(ok("---\n"), Value::Null);
    assert_eq!(ok("--- \na: 1\n...\n"), json!({"a": 1}));
    assert_eq!(ok("just text"), json!("just text"));
    assert_eq!(ok("- 1\n- two"), json!([1, "two"]));
    let e = err("a: 1\n---\nb: 2\n");
    assert_eq!(
        e.message,
        "expected a single YAML document, found another one"
    );
    assert_eq!(e.line, 2);
    assert_eq!(err("---\na: 1\n...\n---\nb: 1").line, 4);
}

#[test]
fn syntax_errors_have_positions() {
    let e = err("a: 1\nb: [1, 2\nc: 3\n");
    assert!(e.line >= 2, "{e}");
    let e = err("a: 1\n  b: 2\n");
    assert_eq!(e.line, 2, "{e}");
    let e = err("a: \"unterminated\n");
    assert!(e.line >= 1 && e.column >= 1, "{e}");
    let e = err("a: 1\nb: @x\n");
    assert_eq!((e.line, e.column), (2, 4), "{e}");
    let e = err("key: value\n\tbad: tab\n");
    assert!(e.message.contains("tab"), "{e}");
}

#[test]
fn display() {
    let e = err("a: 1\na: 2");
    assert_eq!(e.to_string(), "2:1: duplicate key `a`");
}

#[test]
fn locate_paths() {
    let src = "id: x\nsources:\n  - uri: a\n    type: api\n  - uri: b\n    label: L\nmeta: {k: [1, 2, {z: 3}]}\nalias: &q {w: 1}\nref: *q\n";
    let k = PathSeg::Key;
    let i = PathSeg::Index;
    assert_eq!(locate(src, &[]), Some((1, 1)));
    assert_eq!(locate(src, &[k("id")]), Some((1, 1)));
    assert_eq!(locate(src, &[k("sources")]), Some((2, 1)));
    assert_eq!(locate(src, &[k("sources"), i(0)]), Some((3, 5)));
    assert_eq!(locate(src, &[k("sources"), i(1)]), Some((5, 5)));
    assert_eq!(locate(src, &[k("sources"), i(1), k("label")]), Some((6, 5)));
    assert_eq!(locate(src, &[k("sources"), i(0), k("type")]), Some((4, 5)));
    assert_eq!(
        locate(src, &[k("meta"), k("k"), i(2), k("z")]),
        Some((7, 19))
    );
    assert_eq!(locate(src, &[k("meta"), k("k"), i(1)]), Some((7, 15)));
    assert_eq!(locate(src, &[k("ref"), k("w")]), Some((9, 6)));
    assert_eq!(locate(src, &[k("sources"), i(2)]), None);
    assert_eq!(locate(src, &[k("nope")]), None);
    assert_eq!(locate(src, &[k("id"), k("x")]), None);
    assert_eq!(locate(src, &[i(0)]), None);
    assert_eq!(locate("a: [1\n", &[k("b")]), None);
    assert_eq!(locate("", &[k("b")]), None);
}

/// The fast path must agree exactly with the event path whenever it answers.
fn same(src: &str) -> bool {
    let fast = super::parse_fast(src);
    if let Some(v) = &fast {
        assert_eq!(Ok(v.clone()), super::parse_events(src), "{src:?}");
    }
    fast.is_some()
}

#[test]
fn fast_path_accepts_typical_front_matter() {
    let src = "id: identity.teams.channel-003128\ntype: identity\nlayer: L1\ntitle: Metric lead notes, (v2) & more's\n\
        created: 2025-06-29T06:07:07Z\nversion: 3\nscore: -1.5\nok: true\nnone: null\nempty:\n\
        sources:\n  - uri: \"git://github.com/x/y.md\"\n    type: api\n    digest: \"sha256:03\\u00e9\\n\\\"q\\\"\"\n\
        \n    label: 'It''s'\n  - plain item\n  - [nested, 1]\napplies_to: [billing, finance, 2]\nnone_list: []\n\
        obj: {}\nmeta:\n  deep:\n    deeper: x\ncontent: |\n  line one\n\n    indented\n  end\nafter: Über café\n";
    assert!(same(src));
    let v = parse(src).unwrap();
    assert_eq!(v["sources"][0]["digest"], json!("sha256:03é\n\"q\""));
    assert_eq!(v["content"], json!("line one\n\n  indented\nend\n"));
    assert_eq!(v["empty"], Value::Null);
    assert!(same("content: |\n\n  a\n\n\nnext: 1\n"));
    assert!(same("a:\n  - k: |\n      text\n    j: 2\n  - x\n"));
}

#[test]
fn fast_path_declines_what_it_does_not_know() {
    for src in [
        "a: 1 # comment\n",
        "# c\na: 1\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: 1\na: 2\n",
        "a: foo\n  bar\n",
        "a:\n- x\n",
        "a: .inf\n",
        "a: |-\n  x\n",
        "a: >\n  x\n",
        "a: 1",
        "a: \"\\x41\"\n",
        "a: \"multi\n  line\"\n",
        "- a\n",
        "---\na: 1\n",
        "a: 1\n---\nb: 2\n",
        "a: b: c\n",
        "a: [x, {y: 1}]\n",
        "a: [x, ]\n",
        "? a\n: b\n",
        "null: 1\n",
        "a:\r\n  b: 1\r\n",
        "a:\t1\n",
        "a: 1\n  \n",
        "a: {b: 1}\n",
        "a: 'x' y\n",
        "\u{feff}a: 1\n",
        "a: \"\\ud83d\\ude00\"\n",
        "a: x\u{85}y\n",
        "a:b\n",
    ] {
        assert!(!same(src), "fast path accepted {src:?}");
    }
}

#[test]
fn fast_path_depth_matches_event_path() {
    let nest = |d: usize| -> String {
        (0..d)
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect::<String>()
    };
    assert!(same(&nest(MAX_DEPTH - 1)));
    assert!(!same(&nest(MAX_DEPTH + 5)));
    assert!(err(&nest(MAX_DEPTH + 5)).message.contains("deeper"));
}

#[test]
fn positions_stay_inside_the_text() {
    // saphyr reports end-of-input one line past a text without a final newline.
    assert_eq!(locate("---", &[]), Some((1, 4)));
    assert_eq!(locate("a: 1\n---\n", &[]), Some((1, 1)));
    let e = err("a: [1");
    assert_eq!((e.line, e.column), (1, 6), "{e}");
    // After a final line break, the empty last line is a real position.
    let e = err("a: [1\r\n");
    assert_eq!((e.line, e.column), (2, 1), "{e}");
}

/// Random documents built from front-matter-like pieces plus near misses: the
/// fast path must either decline or agree with the event path (a cheap,
/// deterministic complement to the fuzz target).
#[test]
fn fast_path_agrees_on_generated_documents() {
    const KEYS: &[&str] = &[
        "id", "a", "b", "x.y", "k-1", "2024", "null", "true", "a b", "-x", "\"q\"", "_u", "a/b",
    ];
    const VALUES: &[&str] = &[
        "plain",
        "two words",
        "1",
        "-2",
        "+3",
        "0x1F",
        "0o7",
        "1.5",
        "1e3",
        ".5",
        "true",
        "no",
        "~",
        "null",
        "2026-01-01T00:00:00Z",
        "a:b",
        "a: b",
        "a #b",
        "a#b",
        "a:",
        "'q''s'",
        "'unterminated",
        "\"d\\\"q\"",
        "\"\\u00e9\\n\"",
        "\"\\/\"",
        "\"\\x41\"",
        "\"a\" b",
        "[a, b]",
        "[1, x.y]",
        "[a,]",
        "[ ]",
        "[a, [b]]",
        "{}",
        "{a: 1}",
        "|",
        "|-",
        ">",
        "&a x",
        "*a",
        "!!str 1",
        "Über",
        "a\u{a0}b",
        "x\u{2028}y",
        ".inf",
        "-",
        "- a",
        "? x",
        "@x",
        "`x",
        "%x",
        "a\tb",
        "a ",
        "\"\"",
        "''",
        "[]",
        "a, b",
        "(x)",
        "it's",
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let (mut accepted, mut total) = (0, 0);
    for _ in 0..20_000 {
        let mut doc = String::new();
        let mut indent = 0usize;
        for _ in 0..1 + rnd(8) {
            let pad = " ".repeat(indent);
            match rnd(10) {
                0 => doc.push_str(&format!("{pad}- {}\n", VALUES[rnd(VALUES.len())])),
                1 => doc.push_str(&format!(
                    "{pad}- {}: {}\n",
                    KEYS[rnd(KEYS.len())],
                    VALUES[rnd(VALUES.len())]
                )),
                2 => {
                    doc.push_str(&format!("{pad}{}:\n", KEYS[rnd(KEYS.len())]));
                    indent += [0, 2, 2, 4, 1][rnd(5)];
                }
                3 => {
                    doc.push_str(&format!("{pad}{}: |\n", KEYS[rnd(KEYS.len())]));
                    for _ in 0..rnd(4) {
                        let extra = " ".repeat(rnd(4));
                        let line = ["text", "", "  more", "# not a comment", "a: b", "\tt"][rnd(6)];
                        doc.push_str(&format!("{pad}{extra}{line}\n"));
                    }
                }
                4 => doc.push('\n'),
                5 => indent = indent.saturating_sub(2 * rnd(3)),
                _ => doc.push_str(&format!(
                    "{pad}{}: {}\n",
                    KEYS[rnd(KEYS.len())],
                    VALUES[rnd(VALUES.len())]
                )),
            }
        }
        total += 1;
        accepted += usize::from(same(&doc));
    }
    // Make sure the comparison actually exercised the fast path.
    assert!(
        accepted > total / 20,
        "fast path accepted only {accepted} of {total}"
    );
}
