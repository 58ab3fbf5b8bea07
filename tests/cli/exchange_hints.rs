//! Exchange commands put the fix for a bad input document in the error's
//! hint (rendered under the message), not inside the message text.

use crate::exchange::ClRepo;

#[test]
fn unreadable_json_names_the_place_and_hints_once() {
    let r = ClRepo::init();
    std::fs::write(r.file("broken.json"), "{\"type\": ").unwrap();
    let out = r.run(&[
        "request",
        "validate",
        r.file("broken.json").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("INVALID_JSON: "), "{}", out.stderr);
    assert!(out.stderr.contains("broken.json:1:"), "{}", out.stderr);
    let hints: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("the file must be one JSON document"))
        .collect();
    assert_eq!(hints.len(), 1, "{}", out.stderr);
    assert!(hints[0].trim_start().starts_with("help:"), "{}", out.stderr);
}
