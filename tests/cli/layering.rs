//! The one door, checked in the source: no front end builds resolve options, calls
//! the output gate or records disclosure evidence itself. Each rule names the only
//! places that may; code after a file's `#[cfg(test)]` line is a test and exempt.

use std::path::{Path, PathBuf};

use crate::support::project_root;

const RESOLVE: &str = "crates/ctx-core/src/resolve/";
const DISCLOSE: &str = "crates/ctx-core/src/disclose/";
const GATE: &str = "crates/ctx-core/src/lint/gate.rs";
const EVIDENCE: &str = "crates/ctx-core/src/evidence/";

/// (what is searched for, the only path prefixes where it may appear).
const RULES: &[(&str, &[&str])] = &[
    ("ResolveOptions::new(", &[RESOLVE, DISCLOSE]),
    ("ResolveOptions {", &[RESOLVE, DISCLOSE]),
    ("output_gate(", &[GATE, DISCLOSE]),
    ("blocked_objects(", &[GATE, DISCLOSE]),
    ("bundle::prepare(", &[EVIDENCE, DISCLOSE]),
    ("Record::bundle(", &[EVIDENCE, DISCLOSE]),
    ("Record::read(", &[EVIDENCE, DISCLOSE]),
    ("Record::search(", &[EVIDENCE, DISCLOSE]),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every (file, line, rule) where a rule's text appears outside its allowed places.
fn violations(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["src", "crates"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // A test module of its own (`tests.rs`, `tests/`) is test code throughout.
        if rel.ends_with("/tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (needle, allowed) in RULES {
                if line.contains(needle) && !allowed.iter().any(|a| rel.starts_with(a)) {
                    out.push(format!("{rel}:{}: {needle}", n + 1));
                }
            }
        }
    }
    out
}

#[test]
fn only_the_disclosure_operation_resolves_gates_and_records() {
    let found = violations(&project_root());
    assert!(
        found.is_empty(),
        "a front end composes disclosure itself (call ctx_core::disclose instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_a_front_end_that_builds_its_own_resolve_options() {
    // The rule can fail: a planted front end that does it by hand is reported.
    let dir = tempfile::tempdir().unwrap();
    let planted = dir.path().join("src/cli");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::create_dir_all(dir.path().join("crates")).unwrap();
    std::fs::write(
        planted.join("leaky.rs"),
        "fn run() {\n    let o = ResolveOptions::new(who, at);\n    output_gate(&r);\n}\n#[cfg(test)]\nmod t { fn x() { output_gate(&r); } }\n",
    )
    .unwrap();
    assert_eq!(
        violations(dir.path()),
        [
            "src/cli/leaky.rs:2: ResolveOptions::new(",
            "src/cli/leaky.rs:3: output_gate("
        ]
    );
}

/// The crates' arrows point down only: each crate may depend on the ctx crates
/// below it in [`LAYERS`] and on none above (or beside) it.
const LAYERS: &[(&str, &[&str])] = &[
    ("crates/ctx-base", &[]),
    ("crates/ctx-core", &["ctx-base"]),
    (".", &["ctx-core"]),
];

/// The ctx crates `manifest` (a Cargo.toml's text) depends on, in any table.
fn ctx_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line.contains("dependencies");
            continue;
        }
        if !in_deps {
            continue;
        }
        if let Some((name, _)) = line.split_once('=') {
            let name = name.trim();
            if name.starts_with("ctx-") || name == "ctx" {
                out.push(name.to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn crate_dependencies_point_down_only() {
    let root = project_root();
    let mut members: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| format!("crates/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    members.push(".".into());
    for member in &members {
        let (_, allowed) = LAYERS
            .iter()
            .find(|(m, _)| m == member)
            .unwrap_or_else(|| panic!("{member} has no place in LAYERS"));
        let text = std::fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap();
        for dep in ctx_dependencies(&text) {
            assert!(
                allowed.contains(&dep.as_str()),
                "{member} depends on {dep}, which is not below it (allowed: {allowed:?})"
            );
        }
    }
    // The check can fail: a base crate that imports the core is reported.
    let upward = "[dependencies]\nserde = \"1\"\nctx-core = { path = \"../ctx-core\" }\n";
    assert_eq!(ctx_dependencies(upward), ["ctx-core"]);
}
