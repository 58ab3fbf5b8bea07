//! What one server round costs the receipt log as the log grows: a round is
//! four appends and two verifies (what `POST /context/v1/requests` plus
//! `GET /context/v1/bundles/{id}` do to it). Prints the milliseconds of one
//! round at each log size. Keys are synthetic; the log lives in a temporary
//! folder.
//!
//!     receipt_log [ENTRIES] [STEP]

use std::time::Instant as Clock;

use ctx_core::exchange::receipts::{build, ReceiptDraft, ReceiptLog};
use ctx_core::exchange::SpecVersion;
use ctx_core::signing::SigningKeyPair;

fn main() {
    let mut args = std::env::args().skip(1);
    let entries: usize = args.next().map_or(4000, |a| a.parse().expect("ENTRIES"));
    let step: usize = args.next().map_or(1000, |a| a.parse().expect("STEP"));
    let dir = tempfile::tempdir().expect("a temporary folder");
    let log = ReceiptLog::open(
        &dir.path().join("receipts.jsonl"),
        Some((
            dir.path().join("receipts.anchor.jsonl"),
            SigningKeyPair::from_seed(&[0x4d; 32]),
        )),
    )
    .expect("a new log");
    let at = ctx_core::time::parse_timestamp("2026-11-01T00:00:00Z").expect("a time");
    let receipt = |n: usize| {
        build(
            &ReceiptDraft {
                operation: "policy.evaluate".into(),
                actor: format!("urn:agent:bench-{n}"),
                subject_ref: "urn:cl:alias:bench".into(),
                outcome: "success".into(),
                user_summary: "Benchmark receipt.".into(),
                ..Default::default()
            },
            at,
            SpecVersion::V02,
        )
        .expect("a receipt")
    };
    println!("| log entries | ms per round (4 appends, 2 verifies) |");
    println!("|---|---|");
    let mut n = 0;
    while n < entries {
        let t = Clock::now();
        for _ in 0..4 {
            log.append(&receipt(n)).expect("append");
            n += 1;
        }
        log.verify().expect("verify");
        log.verify().expect("verify");
        if n % step == 0 {
            println!("| {n} | {:.2} |", t.elapsed().as_secs_f64() * 1000.0);
        }
    }
}
