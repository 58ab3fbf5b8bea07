use std::fs::OpenOptions;
use std::io::Write;

use serde_json::json;

use super::*;

fn bundle() -> Value {
    json!({
        "bundle_id": "ocb_0123456789abcdef01234567",
        "digest": format!("sha256:{}", "ab".repeat(32)),
        "namespace": "acme",
        "consumer": {"type": "agent", "id": "support-agent", "roles": ["support"]},
        "task": "refunds",
        "objects": [{"id": "mission"}, {"id": "policies.refunds"}],
        "excluded": [{"id": "policies.internal", "reason": "denied"}],
        "warnings": [{"code": "conflict-ambiguous", "id": "policies.refunds", "message": "two canonical answers"}],
    })
}

fn log_with(n: usize) -> (tempfile::TempDir, Log) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::new(dir.path().join(".ctx/audit.jsonl"));
    for i in 0..n {
        let e = bundle_event(
            "context.bundle",
            &bundle(),
            &format!("2026-08-09T12:00:0{i}Z"),
        );
        assert_eq!(log.append(e).unwrap().seq, i as u64 + 1);
    }
    (dir, log)
}

fn lines_of(log: &Log) -> Vec<String> {
    std::fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn rewrite(log: &Log, lines: &[String]) {
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    std::fs::write(log.path(), text).unwrap();
}

fn problems(log: &Log) -> Vec<String> {
    log.verify().unwrap().problems
}

#[test]
fn a_fresh_chain_verifies_and_links_each_entry() {
    let (_d, log) = log_with(3);
    let r = log.verify().unwrap();
    assert_eq!(
        (r.entries, r.problems.len(), r.notes.len()),
        (3, 0, 0),
        "{r:?}"
    );
    let entries = log.read().unwrap();
    assert_eq!(
        entries[0].event["extensions"]["ctx.audit"]["prev"],
        Value::Null
    );
    assert_eq!(
        entries[1].event["extensions"]["ctx.audit"]["prev"],
        json!(entries[0].hash)
    );
    assert_eq!(entries[2].event["extensions"]["ctx.audit"]["seq"], json!(3));
    assert_eq!(log.head_path().file_name().unwrap(), "audit.head");
}

/// Events must validate against the published audit-event schema (read
/// from the shared reference folder, so this holds even while the embedded
/// copy is a placeholder).
#[test]
fn events_validate_against_the_reference_schema() {
    let path = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(
        "../shared/reference/opencontext/schemas/logicsrc-opencontext-audit-event.schema.json",
    );
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("note: {} absent; skipped", path.display());
        return;
    };
    let schema: Value = serde_json::from_str(&text).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let (_d, log) = log_with(2);
    let mut events: Vec<Value> = log.read().unwrap().into_iter().map(|e| e.event).collect();
    events.extend(conflict_events(&bundle(), "2026-08-09T12:00:00Z"));
    let mut denied = bundle();
    denied["objects"] = json!([]);
    events.push(bundle_event(
        "context.resolve",
        &denied,
        "2026-08-09T12:00:00Z",
    ));
    assert_eq!(events.last().unwrap()["outcome"], "denied");
    for e in &events {
        let errors: Vec<String> = v.iter_errors(e).map(|x| x.to_string()).collect();
        assert!(errors.is_empty(), "{e}: {errors:?}");
    }
}

#[test]
fn edited_deleted_reordered_and_truncated_entries_are_detected() {
    let (_d, log) = log_with(4);
    let orig = lines_of(&log);

    let mut edited = orig.clone();
    edited[1] = edited[1].replace("support-agent", "support-agenT");
    rewrite(&log, &edited);
    assert!(
        problems(&log).iter().any(|p| p.starts_with("line 3: prev")),
        "{:?}",
        problems(&log)
    );

    let mut deleted = orig.clone();
    deleted.remove(1);
    rewrite(&log, &deleted);
    assert!(
        problems(&log)
            .iter()
            .any(|p| p.starts_with("line 2: seq is 3")),
        "{:?}",
        problems(&log)
    );

    let mut swapped = orig.clone();
    swapped.swap(1, 2);
    rewrite(&log, &swapped);
    assert!(!problems(&log).is_empty());

    rewrite(&log, &orig[..3]);
    let p = problems(&log);
    assert!(p.iter().any(|p| p.contains("truncated")), "{p:?}");
    let err = log
        .append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:00Z",
        ))
        .unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
    assert_eq!(lines_of(&log).len(), 3, "a damaged log is never extended");

    let mut last = orig.clone();
    last[3] = last[3].replace("refunds", "refundz");
    rewrite(&log, &last);
    assert!(
        problems(&log)
            .iter()
            .any(|p| p.contains("entry 4 does not have the hash")),
        "{:?}",
        problems(&log)
    );
    assert!(log
        .append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:00Z"
        ))
        .is_err());

    rewrite(&log, &orig);
    assert!(problems(&log).is_empty());
}

#[test]
fn a_missing_head_is_reported_and_can_be_re_anchored() {
    let (_d, log) = log_with(2);
    std::fs::remove_file(log.head_path()).unwrap();
    assert!(problems(&log).iter().any(|p| p.contains("head file")));
    assert!(log
        .append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:00Z"
        ))
        .is_err());
    assert_eq!(log.rehead().unwrap(), 2);
    assert!(problems(&log).is_empty());
    assert_eq!(
        log.append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:00Z"
        ))
        .unwrap()
        .seq,
        3
    );
}

#[test]
fn an_append_interrupted_before_the_head_update_is_adopted() {
    let (_d, log) = log_with(2);
    let head = std::fs::read(log.head_path()).unwrap();
    log.append(bundle_event(
        "context.bundle",
        &bundle(),
        "2026-08-09T13:00:00Z",
    ))
    .unwrap();
    std::fs::write(log.head_path(), head).unwrap(); // as if the process died before the head rename
    let r = log.verify().unwrap();
    assert!(r.problems.is_empty() && r.notes.len() == 1, "{r:?}");
    assert_eq!(
        log.append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:01Z"
        ))
        .unwrap()
        .seq,
        4
    );
    assert!(log.verify().unwrap().notes.is_empty());
}

/// A short write (a full disk, a kill inside one `write`) leaves a torn line
/// after the head's entry: the next appender cuts it off, records that in the
/// chain, and goes on.
#[test]
fn a_torn_final_line_after_the_head_is_cut_off_and_recorded() {
    let (_d, log) = log_with(1);
    let good = std::fs::read(log.path()).unwrap();
    let mut f = OpenOptions::new().append(true).open(log.path()).unwrap();
    f.write_all(b"{\"opencontext\":\"1.0\",\"ev").unwrap();
    let r = log.verify().unwrap();
    assert!(r.problems.is_empty(), "{r:?}");
    assert!(r.pending[0].contains("torn final line (24 bytes"), "{r:?}");
    let e = log
        .append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:00Z",
        ))
        .unwrap();
    assert_eq!(e.seq, 3, "the recovery entry is entry 2");
    let bytes = std::fs::read(log.path()).unwrap();
    assert!(bytes.starts_with(&good));
    let entries = log.read().unwrap();
    let what = recovery(&entries[1].event).expect("a recovery entry");
    assert_eq!(what["removed_bytes"], 24);
    let r = log.verify().unwrap();
    assert!(r.problems.is_empty() && r.pending.is_empty(), "{r:?}");
    assert!(r.notes[0].contains("cut off a torn final line"), "{r:?}");
}

/// A line cut short inside what the head vouches for is truncation, not an
/// interrupted append: refused, never repaired.
#[test]
fn a_torn_line_inside_the_head_stops_appends() {
    let (_d, log) = log_with(2);
    let bytes = std::fs::read(log.path()).unwrap();
    std::fs::write(log.path(), &bytes[..bytes.len() - 10]).unwrap();
    assert!(problems(&log).iter().any(|p| p.contains("incomplete")));
    let err = log
        .append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:00Z",
        ))
        .unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
}

/// The head comes before the first line, so a kill in the first audited
/// command (line written, head not yet updated) leaves a log the next
/// append takes up.
#[test]
fn a_new_log_gets_its_head_before_its_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::new(dir.path().join(".ctx/audit.jsonl"));
    let mut a = log.begin().unwrap();
    assert!(log.head_path().exists(), "the head is written at begin");
    assert_eq!(a.seq(), 0);
    let head = std::fs::read(log.head_path()).unwrap();
    a.append(bundle_event(
        "context.bundle",
        &bundle(),
        "2026-08-09T13:00:00Z",
    ))
    .unwrap();
    drop(a);
    std::fs::write(log.head_path(), head).unwrap(); // killed before the head update
    let r = log.verify().unwrap();
    assert!(r.problems.is_empty() && r.notes.len() == 1, "{r:?}");
    assert_eq!(
        log.append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:01Z"
        ))
        .unwrap()
        .seq,
        2
    );
}

/// An interrupted transaction's events are appended once: those already in
/// the log are recognised.
#[test]
fn journaled_events_are_completed_once() {
    let (d, log) = log_with(1);
    let e = |t: &str| bundle_event("context.bundle", &bundle(), t);
    let journal = json!({
        "log": log.path(),
        "after": 1,
        "events": [e("2026-08-09T14:00:00Z"), e("2026-08-09T14:00:01Z")],
    });
    // Killed after the first of the two was appended.
    log.append(e("2026-08-09T14:00:00Z")).unwrap();
    assert_eq!(complete(d.path(), &journal).unwrap(), 1);
    assert_eq!(complete(d.path(), &journal).unwrap(), 0, "never twice");
    let entries = log.read().unwrap();
    assert_eq!(entries.len(), 3);
    assert_eq!(
        entries[2].event["extensions"]["ctx.audit"]["recovered"],
        true
    );
    assert!(log.verify().unwrap().problems.is_empty());
}

/// An in-place edit of a middle line keeps every byte offset, so the
/// head still matches: only hashing the chain reveals it, and the
/// appender must do so before extending the log.
#[test]
fn a_same_length_edit_of_a_middle_line_stops_appends() {
    let (_d, log) = log_with(4);
    let mut lines = lines_of(&log);
    let before = lines[1].len();
    lines[1] = lines[1].replacen("support-agent", "support-agenT", 1);
    assert_eq!(lines[1].len(), before);
    rewrite(&log, &lines);
    let bytes = std::fs::read(log.path()).unwrap();
    let err = log
        .append(bundle_event(
            "context.bundle",
            &bundle(),
            "2026-08-09T13:00:00Z",
        ))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("entry 3 does not link to the hash of entry 2")
            && err.contains("refusing to append"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(log.path()).unwrap(),
        bytes,
        "nothing appended"
    );
}

/// `begin` holds the lock and a verified position: several appends through
/// one appender chain on, and the head follows the last one.
#[test]
fn one_appender_extends_the_chain_several_times() {
    let (_d, log) = log_with(1);
    let mut a = log.begin().unwrap();
    for i in 0..3 {
        let e = a
            .append(bundle_event(
                "context.bundle",
                &bundle(),
                &format!("2026-08-09T13:00:0{i}Z"),
            ))
            .unwrap();
        assert_eq!(e.seq, i + 2);
    }
    drop(a);
    let r = log.verify().unwrap();
    assert_eq!((r.entries, r.problems.len(), r.notes.len()), (4, 0, 0));
}
