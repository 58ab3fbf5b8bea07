use serde_json::{json, Value};

use super::bundle::{self, Emission, RequestEcho, SignOptions};
use super::record::{self, BundleEvent, Record, Recorder, WriteKind};
use crate::audit::Log;
use crate::manifest::Manifest;

const BASE: &str = "opencontext: \"1.0\"\nid: acme\ncontext:\n  mission: ./mission.md\n";

fn repo(audit: &str) -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("opencontext.yaml"),
        format!("{BASE}{audit}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("mission.md"),
        "---\nid: mission\ntype: mission\n---\nx\n",
    )
    .unwrap();
    let (m, _) = Manifest::load(&dir.path().join("opencontext.yaml")).unwrap();
    (dir, m)
}

fn events(m: &Manifest) -> Vec<Value> {
    Log::new(m.root.join(".ctx/audit.jsonl"))
        .read()
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect()
}

fn bundle() -> Value {
    json!({
        "bundle_id": "ocb_0123456789abcdef01234567",
        "digest": format!("sha256:{}", "ab".repeat(32)),
        "namespace": "acme",
        "as_of": "2026-08-09T12:00:00Z",
        "consumer": {"type": "role", "id": "support", "roles": ["support"]},
        "objects": [{"id": "mission"}],
        "excluded": [],
        "warnings": [{"code": "conflict-ambiguous", "id": "mission", "message": "two answers"}],
    })
}

const AT: &str = "2026-08-09T12:00:00Z";

#[test]
fn each_flag_gates_its_own_events() {
    let (_d, m) = repo("audit:\n  context_writes: true\n");
    let r = Recorder::open(&m).unwrap();
    let read = Record::read(None, &["support".to_string()], ["mission"]);
    assert!(r.events(&read, AT).is_empty(), "reads are not asked for");
    let write = Record::write(
        Some("bot"),
        &[],
        WriteKind::Write,
        [("decisions.x", true), ("notes.y", false)],
    );
    let ev = r.events(&write, AT);
    assert_eq!(ev.len(), 1, "decisions flag is off: {ev:?}");
    assert_eq!(ev[0]["event"], "context.write");
    assert_eq!(ev[0]["actor"], json!({"type": "agent", "id": "bot"}));
    assert_eq!(ev[0]["objects"], json!(["decisions.x", "notes.y"]));

    let (_d, m) = repo("audit:\n  decisions: true\n  context_reads: true\n");
    let r = Recorder::open(&m).unwrap();
    let ev = r.events(&write, AT);
    assert_eq!(
        ev.iter().map(|e| e["event"].clone()).collect::<Vec<_>>(),
        vec![json!("decision.record")]
    );
    assert_eq!(ev[0]["objects"], json!(["decisions.x"]));
    let sup = Record::write(None, &[], WriteKind::Supersede, [("a", false)]);
    assert!(r.events(&sup, AT).is_empty());
    let ev = r.events(
        &Record::search(None, &["a".into(), "b".into()], ["x", "x"]),
        AT,
    );
    assert_eq!(ev[0]["event"], "context.search");
    assert_eq!(ev[0]["objects"], json!(["x"]), "ids are unique");
    assert_eq!(ev[0]["actor"]["roles"], json!(["a", "b"]));
    assert_eq!(ev[0]["namespace"], "acme");
}

#[test]
fn recorded_events_are_valid_and_chained() {
    let (_d, m) =
        repo("audit:\n  context_reads: true\n  context_writes: true\n  conflicts: true\n");
    record::record(&m, Record::read(Some("bot"), &[], ["mission"])).unwrap();
    let b = bundle();
    record::record(&m, Record::bundle(BundleEvent::Bundle, &b)).unwrap();
    let ev = events(&m);
    let names: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["context.read", "context.bundle", "context.conflict"]
    );
    for e in &ev {
        assert!(
            crate::schema::check(crate::schema::Kind::AuditEvent, e).is_empty(),
            "{e}"
        );
    }
    let report = Log::new(m.root.join(".ctx/audit.jsonl")).verify().unwrap();
    assert!(report.problems.is_empty(), "{report:?}");
}

#[test]
fn nothing_is_recorded_when_the_product_fails() {
    let (_d, m) = repo("audit:\n  context_writes: true\n");
    let w = || Record::write(None, &[], WriteKind::Write, [("a", false)]);
    let r: crate::error::Result<()> = record::record_after(&m, Some(w()), || {
        Err(crate::error::Error::Invalid("disk full".into()))
    });
    assert!(r.is_err());
    assert!(events(&m).is_empty(), "a failed write is not recorded");
    record::record_after(&m, None, || Ok(())).unwrap();
    assert!(events(&m).is_empty(), "a dry run records nothing");
    record::record_after(&m, Some(w()), || Ok(())).unwrap();
    assert_eq!(events(&m).len(), 1);
}

#[test]
fn a_damaged_log_refuses_before_the_product_exists() {
    let (_d, m) = repo("audit:\n  context_writes: true\n");
    let w = || Record::write(None, &[], WriteKind::Write, [("a", false)]);
    record::record_after(&m, Some(w()), || Ok(())).unwrap();
    record::record_after(&m, Some(w()), || Ok(())).unwrap();
    let log = m.root.join(".ctx/audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen("\"a\"", "\"b\"", 1)).unwrap();
    let mut produced = false;
    let err = record::record_after(&m, Some(w()), || {
        produced = true;
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(!produced, "the product must not be made");
    assert!(err.contains("refusing to append"), "{err}");
}

#[test]
fn a_present_but_invalid_audit_flag_is_an_error() {
    let (_d, m) = repo("audit:\n  context_reads: \"yes\"\n");
    let err = Recorder::open(&m).unwrap_err().to_string();
    assert!(
        err.contains("audit.context_reads") && err.contains("expected true or false"),
        "{err}"
    );
}

#[test]
fn bundle_evidence_is_held_until_committed() {
    let (_d, m) = repo("audit:\n  context_reads: true\n");
    let b = bundle();
    let e = Emission {
        event: BundleEvent::Resolve,
        bundle: &b,
        request: RequestEcho::default(),
        format: "json",
        started_at: AT,
    };
    let opts = SignOptions::default();
    assert!(!bundle::receipt_due(&m, &opts));
    let prepared = bundle::prepare(&m, &opts, &e, None).unwrap();
    assert!(events(&m).is_empty(), "nothing before commit");
    drop(prepared);
    assert!(
        events(&m).is_empty(),
        "a dropped preparation records nothing"
    );
    let written = bundle::prepare(&m, &opts, &e, None)
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(written, None);
    assert_eq!(events(&m)[0]["event"], "context.resolve");
}
