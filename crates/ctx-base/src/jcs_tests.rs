//! The streaming writer against RFC 8785 and its known edge cases. The RFC's own
//! examples (§3.2.2, §3.2.3, Appendix B) run through `canonical::jcs`, which is
//! this writer; here each case is also streamed into the hasher, so the digest
//! path and the byte path cannot drift apart.

use super::*;
use serde_json::json;

fn jcs(v: &Value) -> String {
    String::from_utf8(to_vec(v)).unwrap()
}

fn parsed(text: &str) -> Value {
    crate::json::parse(text).unwrap()
}

/// Bytes and streamed digest agree.
fn check(v: &Value, expected: &str) {
    assert_eq!(jcs(v), expected);
    assert_eq!(sha256(v), crate::canonical::digest(expected.as_bytes()));
}

#[test]
fn rfc8785_example_streams_to_the_same_bytes() {
    let input = r#"{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"#;
    check(
        &parsed(input),
        "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}",
    );
}

#[test]
fn keys_sort_by_utf16_code_units_not_code_points() {
    // U+1F600 is D83D DE00 in UTF-16: before U+FB33, although after it in UTF-8.
    let v = json!({"\u{20ac}": 1, "\r": 2, "\u{fb33}": 3, "1": 4, "\u{1f600}": 5, "\u{80}": 6, "\u{f6}": 7});
    check(
        &v,
        "{\"\\r\":2,\"1\":4,\"\u{80}\":6,\"\u{f6}\":7,\"\u{20ac}\":1,\"\u{1f600}\":5,\"\u{fb33}\":3}",
    );
    // Two supplementary-plane keys compare by their surrogates, and U+FFFF sorts after both.
    let v = json!({"\u{ffff}": 0, "\u{10000}": 1, "\u{1f600}": 2});
    check(&v, "{\"\u{10000}\":1,\"\u{1f600}\":2,\"\u{ffff}\":0}");
}

#[test]
fn numbers_at_the_edges() {
    // 1e21 is where ECMAScript switches to exponent notation.
    check(
        &parsed("[1e21, 1e20, 999999999999999900000]"),
        "[1e+21,100000000000000000000,999999999999999900000]",
    );
    // 2^53 is exact; 2^53 + 1 is not a double and rounds to 2^53, as in every JCS.
    check(
        &parsed("[9007199254740992, -9007199254740992]"),
        "[9007199254740992,-9007199254740992]",
    );
    check(&json!(9007199254740993u64), "9007199254740992");
    check(&json!(u64::MAX), "18446744073709552000");
    check(&json!(i64::MIN), "-9223372036854776000");
    // Negative zero is zero; small and large exponents keep ECMAScript's form.
    check(
        &parsed("[-0.0, 1e-7, 1.5e-6, 5e-324]"),
        "[0,1e-7,0.0000015,5e-324]",
    );
}

#[test]
fn strings_escape_exactly_the_required_characters() {
    check(
        &json!("\u{0}\u{1f}\u{7f}\u{2028}\"\\/\u{8}\u{c}\n\r\t"),
        "\"\\u0000\\u001f\u{7f}\u{2028}\\\"\\\\/\\b\\f\\n\\r\\t\"",
    );
}

#[test]
fn lone_surrogates_never_reach_the_writer() {
    // A Rust string cannot hold one; the one JSON reader refuses the escape.
    for text in [r#"["\ud800"]"#, r#"{"k": "\udfff"}"#] {
        assert!(crate::json::parse(text).is_err(), "{text}");
        assert!(
            crate::canonical::parse_strict(text.as_bytes()).is_err(),
            "{text}"
        );
    }
}

#[test]
fn digests_can_leave_out_top_level_keys() {
    let v = json!({"b": 1, "digest": "x", "a": [true]});
    assert_eq!(
        sha256_without(&v, &["digest"]),
        crate::canonical::digest(b"{\"a\":[true],\"b\":1}")
    );
    // A large document crosses the hasher's buffer several times.
    let big = json!({ "items": (0..20_000).map(|i| json!({"n": i, "s": "x".repeat(i % 50)})).collect::<Vec<_>>() });
    assert_eq!(sha256(&big), crate::canonical::digest(&to_vec(&big)));
}

#[test]
fn long_arrays_written_in_parallel_batches_are_the_same_bytes() {
    // Across batch boundaries (1024 items) and below the parallel threshold.
    for n in [0, 255, 256, 1023, 1024, 1025, 3000] {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"z": i, "a": format!("item \"{i}\"\n"), "m": [i, {"k": null}]}))
            .collect();
        let parts: Vec<String> = items.iter().map(jcs).collect();
        let expected = format!("[{}]", parts.join(","));
        check(&Value::Array(items), &expected);
    }
}
