//! `ctx request new|evaluate -o FILE` write the document instead of printing it, as
//! `ctx exchange issue -o` does: stdout stays empty (a confirmation goes to stderr),
//! `-o -` prints it once, and `--format json` prints it beside the file.

use serde_json::Value;

use crate::exchange::{at, ClRepo};

#[test]
fn request_new_with_output_writes_the_file_and_prints_nothing() {
    let r = ClRepo::init();
    let out = r.file("req.json");
    let n = r.request_run(&["-o", out.to_str().unwrap()]);
    assert_eq!(n.code, 0, "{}", n.stderr);
    assert!(n.stdout.is_empty(), "{}", n.stdout);
    assert!(n.stderr.contains("stored "), "{}", n.stderr);
    assert_eq!(r.envelope("req.json")["type"], "context_request");

    // `-o -` is stdout: the document once, not twice.
    let dash = r.request_run(&["-o", "-"]);
    assert_eq!(dash.code, 0, "{}", dash.stderr);
    assert_eq!(dash.json()["type"], "context_request");
    // No -o: stdout as before.
    assert_eq!(r.request_run(&[]).json()["type"], "context_request");
    // --format json: the file and stdout both get it.
    let both = r.file("both.json");
    let j = r.request_run(&["-o", both.to_str().unwrap(), "--format", "json"]);
    assert_eq!(j.code, 0, "{}", j.stderr);
    assert_eq!(j.json(), r.envelope("both.json"));
}

#[test]
fn request_evaluate_with_output_writes_the_decision_and_prints_nothing() {
    let r = ClRepo::init();
    let req = r.file("req.json");
    assert_eq!(r.request_run(&["-o", req.to_str().unwrap()]).code, 0);
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

#[test]
fn exchange_issue_follows_the_same_output_rule() {
    let r = ClRepo::init();
    r.request("req.json", &[]);
    assert_eq!(r.evaluate("req.json", "dec.json", 1).code, 0);
    let dec = r.file("dec.json");
    let issue = |extra: &[&str], s: i64| {
        let mut args = vec!["exchange", "issue", dec.to_str().unwrap(), "--at"];
        let when = at(s);
        args.push(&when);
        args.extend_from_slice(extra);
        r.run(&args)
    };
    // `-o -` with --format json: the envelope once on stdout (twice is not one document).
    let dash = issue(&["-o", "-", "--format", "json"], 2);
    assert_eq!(dash.code, 0, "{}", dash.stderr);
    assert!(dash.json()["bundle"].is_object(), "{}", dash.stdout);
    // `-o FILE`: the file, and nothing on stdout.
    let file = r.file("env.json");
    let f = issue(&["-o", file.to_str().unwrap()], 3);
    assert_eq!(f.code, 0, "{}", f.stderr);
    assert!(f.stdout.is_empty(), "{}", f.stdout);
    assert!(r.envelope("env.json")["bundle"].is_object());
}
