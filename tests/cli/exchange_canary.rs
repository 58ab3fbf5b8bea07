//! The canary matrix for the Context Layer exchange: on the canary repository
//! (unique strings planted in denied, out-of-scope, role-excluded,
//! classification-denied, private, invalid-governance and redacted places), the
//! whole exchange — request → evaluate (needs approval) → approve → evaluate →
//! issue → open → exec → propose → review and commit → receipts → discover —
//! runs for the `bot` agent with a policy that would grant everything, and no
//! canary may appear in any output, error, envelope, receipt, state file (the
//! stored proposals too) or audit event. What the bundle does carry is checked
//! too, so the test cannot pass by disclosing nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::canary::{PrivateRepo, CANARIES};
use crate::support::Run;

const AT: &str = "2030-01-01T12:00:00Z";

fn at(seconds: i64) -> String {
    let t = chrono::DateTime::parse_from_rfc3339(AT).unwrap() + chrono::Duration::seconds(seconds);
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A policy that grants `bot` every selector it could name (wildcards
/// included): whatever still stays out is kept out by the resolver.
const POLICY: &str = r#"    predicates:
      everything: { ids: ["*"] }
      customers: { collections: [c] }
      outside: { collections: [outside] }
      vault: { collections: [vault] }
    requesters:
      bot:
        purpose_codes: [draft.response]
        tasks: [draft_only]
        selectors: ["*", everything, customers, outside, vault]
        wildcards: { selectors: true }
        actions: [model.generate_text, email.send, memory.propose]
        approval_actions: [email.send]
        discovery: { budget: 5, reveal: [statement, categories] }
"#;

fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                if e.file_name() != ".git" {
                    stack.push(p);
                }
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn configure(p: &PrivateRepo) {
    let mut keys = Vec::new();
    for id in ["cl-bundle", "cl-anchor"] {
        let r = p.run(&["keys", "generate", "--id", id]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        keys.push(r.stdout.lines().next().unwrap().trim().to_string());
    }
    let manifest = p.repo.path().join("opencontext.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let block = format!(
        "  ctx.exchange:\n    issuer_key: cl-bundle\n    keys:\n      cl-bundle: {{ ed25519: \"{}\", purpose: bundle }}\n      cl-anchor: {{ ed25519: \"{}\", purpose: anchor }}\n    receipts:\n      anchor_key: cl-anchor\n{POLICY}",
        keys[0], keys[1]
    );
    let i = text
        .find("\nextensions:\n")
        .expect("the canary manifest has extensions")
        + "\nextensions:\n".len();
    let text = format!("{}{block}{}", &text[..i], &text[i..]);
    std::fs::write(&manifest, text).unwrap();
}

#[test]
fn no_canary_reaches_any_output_of_the_exchange() {
    let p = PrivateRepo::new().expect("fixture");
    configure(&p);
    let dir = p.repo.path();
    let before = files(dir);
    let f = |name: &str| dir.join(name).display().to_string();
    let (req, appr, dec, env, env2) = (
        f("x.req.json"),
        f("x.appr.json"),
        f("x.dec.json"),
        f("x.env.json"),
        f("x.env2.json"),
    );
    let mut runs: Vec<(String, String, String)> = Vec::new();
    let mut step = |args: &[&str], want: i32| -> Run {
        let r = p.run(args);
        assert_eq!(
            r.code, want,
            "{args:?}\nstdout:\n{}\nstderr:\n{}",
            r.stdout, r.stderr
        );
        runs.push((format!("{args:?}"), r.stdout.clone(), r.stderr.clone()));
        r
    };
    step(
        &[
            "request",
            "new",
            "--as",
            "bot",
            "--purpose-code",
            "draft.response",
            "--task",
            "draft_only",
            "--purpose",
            "Answer a customer",
            "--select",
            "everything",
            "--select",
            "customers",
            "--select",
            "outside",
            "--select",
            "vault",
            "--select",
            "c.denied",
            "--select",
            "c.noread",
            "--select",
            "c.excluded.x",
            "--select",
            "c.restricted",
            "--select",
            "c.invalid",
            "--select",
            "c.broken",
            "--select",
            "vault.passport",
            "--action",
            "model.generate_text",
            "--action",
            "email.send",
            "--action",
            "memory.propose",
            "--at",
            AT,
            "-o",
            &req,
        ],
        0,
    );
    step(&["request", "validate", &req, "--at", &at(1)], 0);
    step(
        &[
            "request",
            "evaluate",
            &req,
            "--at",
            &at(1),
            "--format",
            "json",
        ],
        5,
    );
    step(&["approve", &req, "--show", "--at", &at(2)], 0);
    step(&["approve", &req, "--yes", "--at", &at(2), "-o", &appr], 0);
    let d = step(
        &[
            "request",
            "evaluate",
            &req,
            "--approval",
            &appr,
            "--at",
            &at(3),
            "-o",
            &dec,
        ],
        0,
    );
    step(&["exchange", "issue", &dec, "--at", &at(4), "-o", &env], 0);
    let opened = step(
        &[
            "exchange",
            "open",
            &env,
            "--as",
            "bot",
            "--at",
            &at(5),
            "--format",
            "json",
        ],
        0,
    );
    step(
        &[
            "exchange",
            "exec",
            &env,
            "--as",
            "bot",
            "--action",
            "model.generate_text",
            "--at",
            &at(6),
            "--",
            "sh",
            "-c",
            "cat",
        ],
        0,
    );
    // A second open is a replay: its error must not quote anything either.
    step(
        &["exchange", "open", &env, "--as", "bot", "--at", &at(7)],
        1,
    );
    // A second bundle from the same decision, opened in the people format.
    step(&["exchange", "issue", &dec, "--at", &at(7), "-o", &env2], 0);
    step(
        &["exchange", "open", &env2, "--as", "bot", "--at", &at(8)],
        0,
    );
    // Evaluated again later: same verdict, nothing new disclosed.
    step(
        &[
            "request",
            "evaluate",
            &req,
            "--at",
            &at(8),
            "--format",
            "json",
        ],
        5,
    );
    step(&["receipts", "list", "--format", "json"], 0);
    step(&["receipts", "verify"], 0);
    step(
        &[
            "discover",
            "customer passport ssn",
            "--as",
            "bot",
            "--at",
            &at(9),
        ],
        0,
    );
    step(
        &["discover", "denied body", "--as", "bot", "--at", &at(10)],
        0,
    );
    step(
        &[
            "discover",
            "customer passport ssn denied body",
            "--as",
            "bot",
            "--at",
            &at(11),
            "--format",
            "json",
        ],
        0,
    );
    let committed = proposals(&mut step, dir, &env);
    step(&["receipts", "list"], 0);
    let receipts = step(&["receipts", "list", "--format", "json"], 0).json();
    for r in receipts.as_array().unwrap() {
        let id = r["receipt"]["receipt_id"]
            .as_str()
            .or(r["receipt"]["id"].as_str())
            .expect("a receipt id");
        step(&["receipts", "show", id], 0);
        step(&["receipts", "show", id, "--format", "json"], 0);
    }

    // The exchange disclosed what resolve gives `bot`, and nothing else.
    let envelope = std::fs::read_to_string(&env).unwrap();
    assert!(envelope.contains("ACME visible v2"), "{envelope}");
    assert!(
        envelope.contains("Uri Customer"),
        "content_uri content is disclosed"
    );
    assert!(envelope.contains("\"redacted\""), "redaction is recorded");
    assert!(
        d.stdout.is_empty(),
        "-o writes the decision instead of printing it"
    );
    assert!(std::fs::read_to_string(&dec)
        .unwrap()
        .contains("denied_selectors"));
    assert!(!opened.stdout.is_empty());

    let mut canaries: Vec<&str> = CANARIES.to_vec();
    canaries.retain(|c| !c.is_empty());
    let mut failures = Vec::new();
    for (what, stdout, stderr) in &runs {
        for (stream, text) in [("stdout", stdout), ("stderr", stderr)] {
            let found: Vec<&&str> = canaries.iter().filter(|c| text.contains(**c)).collect();
            if !found.is_empty() {
                failures.push(format!("{what} {stream} leaks {found:?}"));
            }
        }
    }
    let mut state_files = 0;
    for (path, bytes) in files(dir) {
        if before.get(&path) == Some(&bytes) {
            continue;
        }
        let rel = path
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        state_files += usize::from(rel.starts_with(".ctx/exchange/"));
        // The parse cache mirrors the repository's own (non-private) files for the
        // next load; it is no output.
        // Objects a commit wrote are sources, not output: what `bot` sees of them
        // after the commit was checked through resolve and get.
        if rel.starts_with(".ctx/cache/") || committed.contains(&rel) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let found: Vec<&&str> = canaries.iter().filter(|c| text.contains(**c)).collect();
        if !found.is_empty() {
            failures.push(format!("{rel} leaks {found:?}"));
        }
    }
    assert!(
        state_files >= 4,
        "requests, decisions, bundles and receipts were written"
    );
    let audit = std::fs::read_to_string(dir.join(".ctx/audit.jsonl")).unwrap_or_default();
    assert!(
        audit.contains("c.visible"),
        "the disclosure is in the repository's audit log:\n{audit}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The candidate of a memory proposal about `id`, written to `name`.
fn candidate(dir: &Path, name: &str, id: &str, handle: &str) -> String {
    let c = serde_json::json!({
        "operation": "add_or_contradict",
        "proposed_claims": [{"predicate": id, "object": {"value": "Bot's note.", "datatype": "text"}, "confidence": 0.5}],
        "provenance_handles": [handle],
        "rationale": "seen in a ticket",
    });
    let path = dir.join(name);
    std::fs::write(&path, c.to_string()).unwrap();
    path.display().to_string()
}

/// `bot` proposes memory through its bundle — about an object it sees, about an
/// id it cannot see, and with a handle the bundle never disclosed (refused) —
/// then the operator reviews both and commits the first (the second is refused:
/// its author may not read its target), and `bot` resolves again. Returns
/// the object files the commits wrote (relative to `dir`).
fn proposals(step: &mut impl FnMut(&[&str], i32) -> Run, dir: &Path, env: &str) -> Vec<String> {
    let bundle: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env).unwrap()).unwrap();
    let handle = bundle["bundle"]["context"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["value"]["id"] == "c.visible")
        .expect("c.visible is in the bundle")["provenance_handles"][0]
        .as_str()
        .unwrap()
        .to_string();
    let seen = candidate(dir, "x.cand-seen.json", "c.visible", &handle);
    let unseen = candidate(dir, "x.cand-unseen.json", "c.denied", &handle);
    let unknown = candidate(dir, "x.cand-unknown.json", "c.visible", "prov_0000");
    let when = at(12);
    let propose = ["propose", "--bundle", env, "--as", "bot", "--at", &when];
    let mut ids = Vec::new();
    for (cand, format) in [(&seen, "human"), (&unseen, "json")] {
        let mut args = propose.to_vec();
        args.extend([cand.as_str(), "--format", format]);
        let r = step(&args, 0);
        ids.push(r.json()["id"].as_str().unwrap().to_string());
    }
    let mut args = propose.to_vec();
    args.push(&unknown);
    step(&args, 1);
    let stored = dir.join(".ctx/exchange/proposals");
    assert_eq!(std::fs::read_dir(&stored).unwrap().count(), 2, "stored");
    step(&["proposals", "list", "--at", &at(13)], 0);
    step(
        &["proposals", "list", "--at", &at(13), "--format", "json"],
        0,
    );
    for id in &ids {
        step(&["proposals", "show", id, "--at", &at(13)], 0);
        step(
            &["proposals", "show", id, "--at", &at(13), "--format", "json"],
            0,
        );
        step(&["proposals", "approve", id, "--at", &at(14)], 0);
    }
    // The reviewer's dry run shows the planned files; for an object `bot` sees
    // they hold nothing it may not see either.
    step(
        &["proposals", "commit", &ids[0], "--dry-run", "--at", &at(15)],
        0,
    );
    let mut written = Vec::new();
    // A proposal never writes what its author cannot read: the one about `c.denied`
    // was accepted (an unseen id answers as a missing one), its commit is refused.
    step(&["proposals", "commit", &ids[1], "--at", &at(15)], 1);
    for id in &ids[..1] {
        let c = step(&["proposals", "commit", id, "--at", &at(15)], 0);
        written.extend(
            c.stdout
                .lines()
                .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("context/")))
                .map(str::to_string),
        );
    }
    assert!(!written.is_empty(), "{written:?}");
    // What `bot` sees once the commit is in.
    let later = at(16);
    for args in [
        &["resolve", "--agent", "bot", "--at", &later][..],
        &[
            "resolve",
            "--agent",
            "bot",
            "--at",
            &later,
            "--include-historical",
            "--format",
            "markdown",
        ],
        &[
            "list",
            "--agent",
            "bot",
            "--at",
            &later,
            "--include-historical",
        ],
        &["search", "customer", "--agent", "bot", "--format", "json"],
        &["history", "c.visible", "--agent", "bot"],
    ] {
        step(args, 0);
    }
    step(&["get", "c.denied", "--agent", "bot"], 3);
    written
}
