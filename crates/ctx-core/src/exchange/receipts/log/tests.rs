//! The process remembers what it verified; these tamper with the files
//! between reads in one process, where only the memo could hide a change.

use super::*;
use crate::exchange::receipts::{build, ReceiptDraft};
use crate::exchange::wire::SpecVersion;

fn receipt(n: u32) -> Value {
    let at = crate::time::parse_timestamp("2026-01-01T00:00:00Z").unwrap();
    build(
        &ReceiptDraft {
            operation: "policy.evaluate".into(),
            actor: format!("urn:agent:memo-{n}"),
            subject_ref: "urn:cl:alias:memo".into(),
            outcome: "success".into(),
            user_summary: "Memo test receipt.".into(),
            ..Default::default()
        },
        at,
        SpecVersion::V02,
    )
    .unwrap()
}

/// A log with three receipts, verified (and so remembered) by this process.
fn store() -> (tempfile::TempDir, ReceiptLog, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.jsonl");
    let anchor = dir.path().join("receipts.anchor.jsonl");
    let key = SigningKeyPair::generate().unwrap();
    let log = ReceiptLog::open(&path, Some((anchor, key))).unwrap();
    for n in 0..3 {
        log.append(&receipt(n)).unwrap();
    }
    assert_eq!(log.verify().unwrap().entries.len(), 3);
    (dir, log, path)
}

fn code(log: &ReceiptLog) -> &'static str {
    log.verify().expect_err("tampering must be caught").code
}

#[test]
fn appends_after_a_remembered_read_chain_on() {
    let (_d, log, path) = store();
    log.append(&receipt(9)).unwrap();
    let s = log.verify().unwrap();
    assert_eq!(s.entries.len(), 4);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(s.file_digest, canon::digest_bytes(&bytes));
    assert_eq!(s.byte_length, bytes.len() as u64);
}

/// The three receipts' log bytes, each line.
fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.split_inclusive('\n').map(str::to_string).collect()
}

#[test]
fn a_same_length_edit_of_a_remembered_middle_entry_is_caught() {
    let (_d, log, path) = store();
    let mut l = lines(&path);
    l[1] = l[1].replacen("memo-1", "memo-X", 1);
    std::fs::write(&path, l.concat()).unwrap();
    assert_eq!(code(&log), "RECEIPT_LOG_CHAIN_MISMATCH");
    assert_eq!(
        code(&log),
        "RECEIPT_LOG_CHAIN_MISMATCH",
        "and stays refused"
    );
}

#[test]
fn a_rechained_rewrite_of_remembered_entries_is_caught_by_the_anchor() {
    let (_d, log, path) = store();
    // A well-formed chain of the same length and count, other content.
    let other = tempfile::tempdir().unwrap();
    let forged = ReceiptLog::open(
        &other.path().join("receipts.jsonl"),
        Some((
            other.path().join("receipts.anchor.jsonl"),
            SigningKeyPair::generate().unwrap(),
        )),
    )
    .unwrap();
    for n in [0, 7, 2] {
        forged.append(&receipt(n)).unwrap();
    }
    let bytes = std::fs::read(other.path().join("receipts.jsonl")).unwrap();
    assert_eq!(bytes.len(), std::fs::read(&path).unwrap().len());
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(code(&log), "RECEIPT_LOG_REWRITE");
}

#[test]
fn a_rollback_below_remembered_bytes_is_caught() {
    let (_d, log, path) = store();
    std::fs::write(&path, lines(&path)[..2].concat()).unwrap();
    assert_eq!(code(&log), "RECEIPT_LOG_ROLLBACK");
}

#[test]
fn a_log_truncated_inside_a_remembered_entry_is_caught() {
    let (_d, log, path) = store();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
    assert_eq!(code(&log), "RECEIPT_LOG_TRUNCATED");
    // Cut back to an entry boundary it is a rollback, not a fresh start.
    std::fs::write(&path, lines(&path)[..1].concat()).unwrap();
    assert_eq!(code(&log), "RECEIPT_LOG_ROLLBACK");
}

#[test]
fn restoring_the_verified_bytes_verifies_again() {
    let (_d, log, path) = store();
    let good = std::fs::read(&path).unwrap();
    std::fs::write(&path, &good[..good.len() / 2]).unwrap();
    assert_eq!(code(&log), "RECEIPT_LOG_TRUNCATED");
    std::fs::write(&path, &good).unwrap();
    assert_eq!(log.verify().unwrap().entries.len(), 3);
}

#[test]
fn an_unanchored_suffix_after_remembered_bytes_is_caught() {
    let (_d, log, path) = store();
    let text = std::fs::read_to_string(&path).unwrap();
    let last = text.split_inclusive('\n').next_back().unwrap().to_string();
    std::fs::write(&path, format!("{text}{last}")).unwrap();
    assert_eq!(code(&log), "RECEIPT_LOG_CHAIN_MISMATCH");
}

#[test]
fn a_rewritten_anchor_record_is_caught() {
    let (d, log, _) = store();
    let anchor = d.path().join("receipts.anchor.jsonl");
    let text = std::fs::read_to_string(&anchor).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let forged = lines[1].replacen("\"byte_length\":", "\"byte_length\":1", 1);
    lines[1] = &forged;
    std::fs::write(&anchor, format!("{}\n", lines.join("\n"))).unwrap();
    assert_eq!(code(&log), "RECEIPT_ANCHOR_SIGNATURE_INVALID");
}
