//! The Context Layer receipt log: fail closed, indeterminate outcomes and
//! their recovery, and detection of rewrite, rollback and unanchored suffix.

use crate::exchange::{at, ClRepo};

fn exec(r: &ClRepo, env: &str, s: i64, script: &str) -> crate::support::Run {
    let e = r.file(env);
    r.run(&[
        "exchange",
        "exec",
        e.to_str().unwrap(),
        "--as",
        "support-agent",
        "--action",
        "model.generate_text",
        "--at",
        &at(s),
        "--",
        "sh",
        "-c",
        script,
    ])
}

#[test]
fn nothing_runs_without_a_receipt_path_and_an_unrecorded_success_is_indeterminate() {
    let r = ClRepo::init();
    let env = r.bundle("f", &[]);
    assert_eq!(r.open(&env, "support-agent", 3).code, 0);
    let log = r.file(".ctx/exchange/receipts.jsonl");
    let aside = r.file(".ctx/exchange/receipts.aside");
    let marker = r.file("ran.txt");
    std::fs::rename(&log, &aside).unwrap();
    std::fs::create_dir(&log).unwrap();
    let before = exec(&r, &env, 4, &format!("touch {}", marker.display()));
    assert_eq!(before.code, 1, "{}", before.stderr);
    assert!(!marker.exists(), "the action ran without a receipt path");
    std::fs::remove_dir(&log).unwrap();
    std::fs::rename(&aside, &log).unwrap();
    // The action itself takes the receipt path away: its success cannot be recorded.
    let script = format!(
        "mv {} {} && mkdir {} && echo done",
        log.display(),
        aside.display(),
        log.display()
    );
    let ind = exec(&r, &env, 5, &script);
    assert_eq!(ind.code, 6, "{}", ind.stderr);
    assert!(
        ind.stderr.contains("INDETERMINATE_OUTCOME"),
        "{}",
        ind.stderr
    );
    assert_eq!(ind.stdout.trim(), "done");
    std::fs::remove_dir(&log).unwrap();
    std::fs::rename(&aside, &log).unwrap();
    let blocked = exec(&r, &env, 6, "echo again");
    assert_eq!(blocked.code, 1);
    assert!(
        blocked.stderr.contains("INDETERMINATE_OUTCOME_PENDING"),
        "{}",
        blocked.stderr
    );
    let retry = r.run(&["receipts", "retry", "--format", "json"]);
    assert_eq!(retry.code, 0, "{}", retry.stderr);
    assert_eq!(retry.json()["completed"].as_array().unwrap().len(), 1);
    let again = r.run(&["receipts", "retry", "--format", "json"]);
    assert_eq!(
        again.json()["completed"].as_array().unwrap().len(),
        0,
        "retry is idempotent"
    );
    assert_eq!(exec(&r, &env, 7, "echo again").code, 0);
    assert_eq!(r.run(&["receipts", "verify"]).code, 0);
}

#[test]
fn required_receipts_without_a_store_deny_the_request() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(crate::support::ctx(d.path(), &["init"]).code, 0);
    let r = ClRepo::configure(d, crate::exchange::POLICY);
    let m = r.file("opencontext.yaml");
    let text = std::fs::read_to_string(&m)
        .unwrap()
        .replace("    receipts:\n      anchor_key: t-anchor\n", "");
    std::fs::write(&m, text).unwrap();
    r.request("s.req.json", &[]);
    let e = r.evaluate("s.req.json", "s.dec.json", 1);
    assert_eq!(e.code, 4, "{}", e.stderr);
    let d = r.envelope("s.dec.json");
    assert_eq!(d["receipt_preflight"]["status"], "unavailable");
    assert!(d["reason_codes"]
        .as_array()
        .unwrap()
        .contains(&"RECEIPT_PREFLIGHT_FAILED".into()));
    let v = r.run(&["receipts", "verify"]);
    assert_eq!(v.code, 1);
    assert!(v.stderr.contains("RECEIPT_ANCHOR_REQUIRED"), "{}", v.stderr);
}

#[test]
fn rewrite_rollback_and_unanchored_suffix_are_detected() {
    let r = ClRepo::init();
    let env = r.bundle("t", &[]);
    let log = r.file(".ctx/exchange/receipts.jsonl");
    let anchor = r.file(".ctx/exchange/receipts.anchor.jsonl");
    let anchor_two = std::fs::read(&anchor).unwrap();
    assert_eq!(r.open(&env, "support-agent", 3).code, 0);
    let good_log = std::fs::read_to_string(&log).unwrap();
    let good_anchor = std::fs::read(&anchor).unwrap();
    let code = |expected: &str| {
        let v = r.run(&["receipts", "verify"]);
        assert_eq!(v.code, 1, "{expected}: {}", v.stdout);
        assert!(
            v.stderr.contains(expected),
            "expected {expected}: {}",
            v.stderr
        );
    };
    // Rewrite: an entry's text changes.
    std::fs::write(&log, good_log.replace("bundle.issue", "bundle.issuX")).unwrap();
    code("RECEIPT_LOG_CHAIN_MISMATCH");
    // Rollback: the last entry is removed, the newest anchor kept.
    let first_two: String = good_log.split_inclusive('\n').take(2).collect();
    std::fs::write(&log, &first_two).unwrap();
    code("RECEIPT_LOG_ROLLBACK");
    // Unanchored suffix: the log is intact but the anchor is older. A check
    // reports it as what an interrupted append leaves, and repairs nothing.
    std::fs::write(&log, &good_log).unwrap();
    std::fs::write(&anchor, &anchor_two).unwrap();
    code("RECEIPT_LOG_UNANCHORED_SUFFIX");
    code("an interrupted append");
    // Missing anchor for a non-empty log.
    std::fs::remove_file(&anchor).unwrap();
    code("RECEIPT_ANCHOR_MISSING");
    // A forged anchor signature.
    let text = String::from_utf8(good_anchor.clone()).unwrap();
    let i = text.find("\"sig\":\"ed25519:").unwrap() + "\"sig\":\"ed25519:".len();
    let flipped = if &text[i..i + 1] == "A" { "B" } else { "A" };
    std::fs::write(
        &anchor,
        format!("{}{flipped}{}", &text[..i], &text[i + 1..]),
    )
    .unwrap();
    code("RECEIPT_ANCHOR_SIGNATURE_INVALID");
    std::fs::write(&anchor, &good_anchor).unwrap();
    assert_eq!(r.run(&["receipts", "verify"]).code, 0);
    // A tampered log refuses every operation that needs receipts.
    std::fs::write(&log, &first_two).unwrap();
    let o = r.open(&env, "support-agent", 4);
    assert_eq!(o.code, 1);
}

#[test]
fn corrections_supersede_and_keep_the_original() {
    let r = ClRepo::init();
    r.bundle("c", &[]);
    let list = r.run(&["receipts", "list", "--format", "json"]).json();
    let first = list[0]["receipt"]["id"].as_str().unwrap().to_string();
    let s = r.run(&[
        "receipts",
        "supersede",
        &first,
        "--outcome",
        "failure",
        "--summary",
        "Recorded in error; the evaluation was repeated.",
        "--at",
        &at(9),
    ]);
    assert_eq!(s.code, 0, "{}", s.stderr);
    assert_eq!(s.json()["supersedes_ref"], first.as_str());
    let list = r.run(&["receipts", "list", "--format", "json"]).json();
    assert_eq!(list.as_array().unwrap().len(), 3);
    assert!(list[0]["superseded_by"].is_string());
    let shown = r.run(&[
        "receipts",
        "show",
        &first[first.len() - 64..first.len() - 50],
    ]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
}
