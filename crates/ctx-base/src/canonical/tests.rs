use super::*;
use serde_json::json;

fn jcs_str(text: &str) -> String {
    let value = parse_strict(text.as_bytes()).expect("parse");
    String::from_utf8(jcs(&value).expect("jcs")).expect("utf-8")
}

#[test]
fn rfc8785_section_3_2_2_example() {
    let input = r#"{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"#;
    let expected = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
    assert_eq!(jcs_str(input), expected);
}

#[test]
fn rfc8785_section_3_2_3_sorting_by_utf16_code_units() {
    // U+1F600 (surrogates D83D DE00) sorts before U+FB33 in UTF-16 order,
    // although it comes after it in code-point (and UTF-8 byte) order.
    let input = r#"{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}"#;
    let expected = concat!(
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",",
        "\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",",
        "\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
    );
    assert_eq!(jcs_str(input), expected);
}

#[test]
fn rfc8785_appendix_b_number_serialisation() {
    let cases: &[(u64, &str)] = &[
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for &(bits, expected) in cases {
        let value = Value::from(f64::from_bits(bits));
        let out = String::from_utf8(jcs(&value).unwrap()).unwrap();
        assert_eq!(out, expected, "bits {bits:016x}");
    }
}

#[test]
fn number_text_is_reformatted_not_copied() {
    assert_eq!(
        jcs_str("[1e30, 1E+30, 4.50, 0.002, 2e-3, -0, 0, 10.0, -1]"),
        "[1e+30,1e+30,4.5,0.002,0.002,0,0,10,-1]"
    );
    assert_eq!(jcs_str("333333333.33333329"), "333333333.3333333");
}

#[test]
fn whitespace_and_order_do_not_change_canonical_bytes() {
    let a = jcs_str("{ \"b\" : [ 1 , {\"y\":null,\"x\":true} ], \"a\":\"\u{e9}\" }");
    let b = jcs_str("{\"a\":\"\\u00e9\",\"b\":[1,{\"x\":true,\"y\":null}]}");
    assert_eq!(a, b);
    assert_eq!(a, "{\"a\":\"\u{e9}\",\"b\":[1,{\"x\":true,\"y\":null}]}");
}

#[test]
fn duplicate_keys_are_rejected_at_any_depth() {
    for text in [
        r#"{"a":1,"a":1}"#,
        r#"{"a":1,"b":{"c":[{"d":1,"d":2}]}}"#,
        r#"[{"x":{}}, {"k":0, "k":0}]"#,
        // The same key spelled with an escape is still the same key.
        r#"{"decision":"inject","d\u0065cision":"withhold"}"#,
    ] {
        let err = parse_strict(text.as_bytes()).unwrap_err();
        assert!(
            matches!(err.violation(), Some(Violation::DuplicateKey(_))),
            "{text}: {err}"
        );
    }
    let err = parse_strict(b"{\n  \"a\": 1,\n  \"a\": 2\n}").unwrap_err();
    match err {
        CanonicalError::Refused {
            violation: Violation::DuplicateKey(k),
            line,
            ..
        } => {
            assert_eq!(k, "a");
            assert_eq!(line, 3);
        }
        other => panic!("unexpected {other:?}"),
    }
    // Same key in sibling objects is fine.
    assert!(parse_strict(br#"[{"a":1},{"a":2}]"#).is_ok());
}

#[test]
fn unsafe_integers_are_refused_safe_ones_kept() {
    for ok in [
        "9007199254740991",
        "-9007199254740991",
        "0",
        "[1e300, 9007199254740993.5]",
        "\"18446744073709551616\"",
        r#"{"n\"123456789012345678901":1}"#,
    ] {
        assert!(parse_strict(ok.as_bytes()).is_ok(), "{ok}");
    }
    for bad in [
        "9007199254740992",
        "-9007199254740992",
        "18446744073709551615",
        "18446744073709551616",
        "-18446744073709551616",
        "[1, {\"a\": 123456789012345678901234567890}]",
    ] {
        let err = parse_strict(bad.as_bytes()).unwrap_err();
        assert!(
            matches!(err.violation(), Some(Violation::UnsafeInteger(_))),
            "{bad}: {err}"
        );
    }
    let err = jcs(&json!({"a": [1, u64::MAX]})).unwrap_err();
    assert_eq!(
        err,
        CanonicalError::Value {
            violation: Violation::UnsafeInteger(u64::MAX.to_string()),
            path: "/a/1".into()
        }
    );
    assert!(jcs(&json!(i64::MIN)).is_err());
    assert!(jcs(&json!(MAX_SAFE_INTEGER)).is_ok());
}

#[test]
fn invalid_text_is_a_syntax_error() {
    for bad in [
        &b"\"\\ud800\""[..],
        b"\"\\udc00x\"",
        b"{\"\\ud83d\":1}",
        b"\"\xff\"",
        b"\"\xed\xa0\x80\"",
        b"{} {}",
        b"[1,]",
        b"NaN",
        b"1e400",
        b"\xef\xbb\xbf{}",
        b"",
    ] {
        let err = parse_strict(bad).unwrap_err();
        assert!(
            matches!(err, CanonicalError::Syntax { .. }),
            "{:?}: {err:?}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(
        parse_strict(b"\"\\ud83d\\ude00\"").unwrap(),
        Value::String("\u{1f600}".into())
    );
}

#[test]
fn digests_use_the_sha256_prefix_form() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        digest(b"abc"),
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        digest_value(&json!({"b": 1, "a": 2})).unwrap(),
        digest(br#"{"a":2,"b":1}"#)
    );
}
