//! What the exchange's man-page EXAMPLES need before they can run in a fresh
//! `ctx init` repository: two keys, the exchange policy, and the files the
//! examples name (request.json, decision.json, bundle.json, opened.json,
//! lead-request.json, approval.json, proposal.json), made by running the flow.

use std::path::Path;

use crate::support::{ctx_env, Run};

/// Does this example line need an exchange-ready repository?
pub fn needs_exchange(line: &str) -> bool {
    [
        "ctx request",
        "ctx approve",
        "ctx exchange",
        "ctx receipts",
        "ctx propose",
        "ctx proposals",
        "ctx discover",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// Configure `dir` (a `ctx init` repository) for the exchange, with keys in
/// `config` (the example's XDG_CONFIG_HOME), and write the example files.
///
/// Each example gets its own: the receipt log's anchor is bound to the log it
/// anchors, so a copied state folder is (rightly) refused.
pub fn prepare(dir: &Path, config: &Path) {
    let run = |args: &[&str]| -> Run {
        let r = ctx_env(dir, args, &[("XDG_CONFIG_HOME", config.to_str().unwrap())]);
        assert_eq!(r.code, 0, "{args:?}\n{}{}", r.stdout, r.stderr);
        r
    };
    let mut keys = Vec::new();
    for id in ["t-bundle", "t-anchor"] {
        let r = run(&["keys", "generate", "--id", id]);
        keys.push(r.stdout.lines().next().unwrap().trim().to_string());
    }
    let block = format!(
        "  ctx.exchange:\n    issuer_key: t-bundle\n    keys:\n      t-bundle: {{ ed25519: \"{}\", purpose: bundle }}\n      t-anchor: {{ ed25519: \"{}\", purpose: anchor }}\n    receipts:\n      anchor_key: t-anchor\n{}",
        keys[0],
        keys[1],
        crate::exchange::POLICY
    );
    let manifest = dir.join("opencontext.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = match text.find("\nextensions:\n") {
        Some(i) => {
            let at = i + "\nextensions:\n".len();
            format!("{}{block}{}", &text[..at], &text[at..])
        }
        None => format!("{text}\nextensions:\n{block}"),
    };
    std::fs::write(&manifest, text).unwrap();
    let request = |purpose: &str, out: &str| {
        run(&[
            "request",
            "new",
            "--as",
            "support-agent",
            "--purpose-code",
            "draft.response",
            "--task",
            "draft_only",
            "--purpose",
            purpose,
            "--select",
            "refund-rules",
            "--action",
            "model.generate_text",
            "--action",
            "memory.propose",
            "-o",
            out,
        ]);
    };
    request("Draft a refund answer", "request.json");
    run(&["request", "evaluate", "request.json", "-o", "decision.json"]);
    for (tag, out) in [("second", "bundle.json"), ("third", "opened.json")] {
        let (req, dec) = (format!("{tag}.req.json"), format!("{tag}.dec.json"));
        request(&format!("Draft a refund answer ({tag})"), &req);
        run(&["request", "evaluate", &req, "-o", &dec]);
        run(&["exchange", "issue", &dec, "-o", out]);
    }
    run(&["exchange", "open", "opened.json", "--as", "support-agent"]);
    run(&[
        "request",
        "new",
        "--as",
        "role:leads",
        "--purpose-code",
        "draft.response",
        "--task",
        "draft_only",
        "--select",
        "policies.internal.escalation",
        "-o",
        "lead-request.json",
    ]);
    run(&[
        "approve",
        "lead-request.json",
        "--yes",
        "-o",
        "approval.json",
    ]);
    let opened = std::fs::read_to_string(dir.join("opened.json")).unwrap();
    let start = opened.find("\"prov_").expect("a provenance handle") + 1;
    let handle = &opened[start..start + opened[start..].find('"').unwrap()];
    std::fs::write(
        dir.join("proposal.json"),
        format!(
            "{{\"operation\": \"add_or_contradict\", \"proposed_claims\": [{{\"predicate\": \"policies.refunds\", \
             \"object\": {{\"value\": \"Refunds within 14 days.\", \"datatype\": \"text\"}}, \"confidence\": 0.7}}], \
             \"provenance_handles\": [\"{handle}\"], \"rationale\": \"A ticket quotes 14 days.\"}}\n"
        ),
    )
    .unwrap();
}
