//! The Context Layer conformance suite and the spec owner's offline kit.

use crate::exchange::shared;
use crate::support::{ctx, project_root};

#[test]
fn the_context_layer_suite_passes_with_json_results() {
    let root = project_root();
    let r = ctx(
        &root,
        &[
            "conformance",
            "conformance/context-layer",
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v = r.json();
    assert_eq!(v["failed"], 0);
    let ids: Vec<&str> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["case"].as_str().unwrap())
        .collect();
    for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14] {
        assert!(
            ids.iter().any(|i| i.starts_with(&format!("cl-{n:02}-"))),
            "no case for §14 test {n}: {ids:?}"
        );
    }
}

#[test]
fn the_offline_kit_reports_every_assertion_passed() {
    let Some(kit) = shared("reference/context-layer-kit/run.mjs") else {
        eprintln!("note: the Context Layer kit is not beside the project; skipped");
        return;
    };
    let out = std::process::Command::new("node")
        .args([
            kit.to_str().unwrap(),
            "--",
            env!("CARGO_BIN_EXE_ctx"),
            "exchange",
            "kit-adapter",
        ])
        .output();
    let Ok(out) = out else {
        eprintln!("note: node is not installed; skipped");
        return;
    };
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the kit prints JSON");
    assert_eq!(report["status"], "passed", "{report}");
    assert_eq!(report["passed"], 45);
    assert_eq!(report["failed"], 0);
}
