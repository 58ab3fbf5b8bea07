//! `ctx request new|evaluate -o FILE` write the document instead of printing it, as
//! `ctx exchange issue -o` does: stdout stays empty (a confirmation goes to stderr),
//! `-o -` prints it once, and `--format json` prints it beside the file.

use serde_json::Value;

use crate::exchange::{at, ClRepo, AT};

fn new_request(r: &ClRepo, extra: &[&str]) -> crate::support::Run {
    let mut args = vec![
        "request",
        "new",
        "--as",
        "support-agent",
        "--purpose-code",
        "draft.response",
        "--task",
        "draft_only",
        "--select",
        "refund-rules",
        "--at",
        AT,
    ];
    args.extend_from_slice(extra);
    r.run(&args)
}

#[test]
fn request_new_with_output_writes_the_file_and_prints_nothing() {
    let r = ClRepo::init();
    let out = r.file("req.json");
    let n = new_request(&r, &["-o", out.to_str().unwrap()]);
    assert_eq!(n.code, 0, "{}", n.stderr);
    assert!(n.stdout.is_empty(), "{}", n.stdout);
    assert!(n.stderr.contains("stored "), "{}", n.stderr);
    assert_eq!(r.envelope("req.json")["type"], "context_request");

    // `-o -` is stdout: the document once, not twice.
    let dash = new_request(&r, &["-o", "-"]);
    assert_eq!(dash.code, 0, "{}", dash.stderr);
    assert_eq!(dash.json()["type"], "context_request");
    // No -o: stdout as before.
    assert_eq!(new_request(&r, &[]).json()["type"], "context_request");
    // --format json: the file and stdout both get it.
    let both = r.file("both.json");
    let j = new_request(&r, &["-o", both.to_str().unwrap(), "--format", "json"]);
    assert_eq!(j.code, 0, "{}", j.stderr);
    assert_eq!(j.json(), r.envelope("both.json"));
}

#[test]
fn request_evaluate_with_output_writes_the_decision_and_prints_nothing() {
    let r = ClRepo::init();
    let req = r.file("req.json");
    assert_eq!(new_request(&r, &["-o", req.to_str().unwrap()]).code, 0);
    let e = r.evaluate("req.json", "dec.json", 1);
    assert_eq!(e.code, 0, "{}", e.stderr);
    assert!(e.stdout.is_empty(), "{}", e.stdout);
    assert!(e.stderr.contains("stored "), "{}", e.stderr);
    let d: Value = r.envelope("dec.json");
    assert_eq!(d["type"], "policy_decision", "{d}");
    let again = r.run(&["request", "evaluate", req.to_str().unwrap(), "--at", &at(2)]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.json()["type"], "policy_decision");
}
