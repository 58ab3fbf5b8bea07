//! The hash-chained audit log through the CLI: events, tampering,
//! sinks and concurrent appenders.

use serde_json::{json, Value};

use super::Signer;
use crate::support::reference;

const AUDIT: &str = "audit:\n  context_reads: true\n  conflicts: true\n";

#[test]
fn audit_log_is_hash_chained_and_tampering_is_detected() {
    let s = Signer::new(AUDIT);
    for _ in 0..3 {
        assert_eq!(
            s.run(&["resolve", "--agent", "support-agent", "--task", "refunds"])
                .code,
            0
        );
    }
    assert_eq!(s.run(&["bundle", "--role", "support"]).code, 0);
    let show = s.run(&["audit", "show", "--limit", "2"]);
    assert_eq!(show.code, 0);
    let lines: Vec<&str> = show.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", show.stdout);
    assert!(
        lines[0].trim_start().starts_with("3 ") && lines[0].contains("context.resolve"),
        "{}",
        show.stdout
    );
    assert!(
        lines[1].contains("context.bundle") && lines[1].contains("role:support"),
        "{}",
        show.stdout
    );
    let v = s.run(&["audit", "verify", "--format", "json"]);
    assert_eq!(
        (v.code, v.json()["entries"].clone()),
        (0, json!(4)),
        "{}",
        v.stdout
    );
    // Every stored line is a valid OpenContext audit event.
    if let Some(reference) = reference() {
        let schema = reference.join("schemas/logicsrc-opencontext-audit-event.schema.json");
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(schema).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        for line in std::fs::read_to_string(s.path().join(".ctx/audit.jsonl"))
            .unwrap()
            .lines()
        {
            let event: Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&event)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{line}: {errors:?}");
        }
    }

    let log = s.path().join(".ctx/audit.jsonl");
    let orig = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = orig.lines().collect();
    let check = |text: String, needle: &str| {
        std::fs::write(&log, text).unwrap();
        let v = s.run(&["audit", "verify"]);
        assert_eq!(v.code, 1, "{needle}: {}", v.stdout);
        assert!(v.stdout.contains(needle), "{needle}: {}", v.stdout);
    };
    check(orig.replacen("refunds", "refundz", 1), "line 2: prev");
    check(
        format!("{}\n{}\n{}\n", lines[0], lines[2], lines[3]),
        "line 2: seq is 3",
    );
    check(
        format!("{}\n{}\n{}\n{}\n", lines[1], lines[0], lines[2], lines[3]),
        "line 1: seq is 2",
    );
    check(
        format!("{}\n{}\n{}\n", lines[0], lines[1], lines[2]),
        "truncated",
    );
    // A damaged log is never extended: no audit record, no output.
    let r = s.run(&["resolve", "--agent", "support-agent"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.is_empty() && r.stderr.contains("refusing to append"),
        "{}",
        r.stderr
    );
    std::fs::write(&log, &orig).unwrap();
    assert_eq!(s.run(&["audit", "verify"]).code, 0);
}

#[test]
fn audit_sink_is_a_relative_file_uri_inside_the_repository() {
    let s = Signer::new("audit:\n  context_reads: true\n  sink: file://./logs/events.ndjson\n");
    assert_eq!(s.run(&["resolve", "--agent", "support-agent"]).code, 0);
    assert!(s.path().join("logs/events.ndjson").is_file());
    assert!(s.path().join("logs/events.head").is_file());
    let out = Signer::new("audit:\n  context_reads: true\n  sink: file:///tmp/elsewhere.ndjson\n");
    let r = out.run(&["resolve", "--agent", "support-agent"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.is_empty() && r.stderr.contains("audit.sink"),
        "{}",
        r.stderr
    );
}

/// Several processes appending at once: every line is whole and the
/// chain stays intact (the file lock serialises appenders).
#[test]
fn concurrent_audit_appends_from_parallel_processes_never_interleave() {
    let s = Signer::new(AUDIT);
    let workers = 2;
    let per_worker = 12;
    std::thread::scope(|scope| {
        for w in 0..workers {
            let s = &s;
            scope.spawn(move || {
                for i in 0..per_worker {
                    let task = format!("worker {w} run {i} {}", "x".repeat(2000));
                    let r = s.run(&["resolve", "--agent", "support-agent", "--task", &task]);
                    assert_eq!(r.code, 0, "{}", r.stderr);
                }
            });
        }
    });
    let v = s.run(&["audit", "verify", "--format", "json"]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert_eq!(v.json()["entries"], json!(workers * per_worker));
    let text = std::fs::read_to_string(s.path().join(".ctx/audit.jsonl")).unwrap();
    for w in 0..workers {
        assert_eq!(text.matches(&format!("worker {w} run")).count(), per_worker);
    }
}
