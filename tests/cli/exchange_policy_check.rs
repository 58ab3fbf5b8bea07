//! `ctx validate` and `ctx doctor` report an exchange policy the exchange would
//! refuse: each issue is a `manifest-invalid` error at its key in
//! opencontext.yaml, with the field, what was expected, what is there and a fix;
//! the exchange's own refusal names one of them.

use serde_json::Value;

use crate::exchange::{ClRepo, POLICY};

/// The exchange findings of a `--format json` report.
fn exchange_findings(report: &Value) -> Vec<Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["field"]
                .as_str()
                .is_some_and(|x| x.starts_with("extensions.ctx.exchange"))
        })
        .cloned()
        .collect()
}

/// The line of opencontext.yaml that starts with `prefix` (after indentation), 1-based.
fn line_of(r: &ClRepo, prefix: &str) -> u64 {
    let text = std::fs::read_to_string(r.file("opencontext.yaml")).unwrap();
    text.lines()
        .position(|l| l.trim_start().starts_with(prefix))
        .map(|n| n as u64 + 1)
        .unwrap_or_else(|| panic!("no line {prefix:?} in\n{text}"))
}

#[test]
fn validate_and_doctor_report_what_the_exchange_would_refuse() {
    let broken = POLICY
        .replace(
            "        max_retention_seconds: 900\n",
            "        max_retention_seconds: 900\n        retention_mode: forever\n        actoins: [email.send]\n",
        )
        .replace(
            "purpose_codes: [draft.response, retrieve.context]",
            "purpose_codes: [draft.response, drafting]",
        );
    let dir = tempfile::tempdir().unwrap();
    let init = crate::support::ctx(dir.path(), &["init"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    let r = ClRepo::configure(dir, &broken);

    let v = r.run(&["validate", "--format", "json"]);
    assert_eq!(v.code, 1, "{}", v.describe());
    let found = exchange_findings(&v.json());
    let fields: Vec<&str> = found.iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert_eq!(
        fields,
        [
            "extensions.ctx.exchange.requesters.support-agent.purpose_codes",
            "extensions.ctx.exchange.requesters.support-agent.retention_mode",
            "extensions.ctx.exchange.requesters.support-agent.actoins",
        ],
        "{}",
        v.describe()
    );
    for f in &found {
        assert_eq!(f["code"], "manifest-invalid");
        assert_eq!(f["severity"], "error");
        assert_eq!(f["file"], "opencontext.yaml");
        assert!(f["remediation"]
            .as_str()
            .unwrap()
            .contains("the exchange refuses every request"));
    }
    let purpose = &found[0];
    assert_eq!(
        purpose["line"].as_u64(),
        Some(line_of(&r, "purpose_codes: [draft.response, drafting]"))
    );
    assert!(purpose["message"]
        .as_str()
        .unwrap()
        .contains("\"drafting\" is neither registered"));
    let retention = &found[1];
    assert_eq!(
        retention["line"].as_u64(),
        Some(line_of(&r, "retention_mode:"))
    );
    assert_eq!(retention["column"], 9);
    assert_eq!(retention["expected"], "`ephemeral` or `single_use`");
    assert_eq!(retention["actual"], "forever");
    let typo = &found[2];
    assert_eq!(typo["line"].as_u64(), Some(line_of(&r, "actoins:")));
    assert_eq!(typo["actual"], "actoins");
    assert!(typo["remediation"]
        .as_str()
        .unwrap()
        .starts_with("did you mean `actions`?"));

    // People see the same, with the line quoted.
    let human = r.run(&["validate"]);
    assert_eq!(human.code, 1);
    let all = format!("{}{}", human.stdout, human.stderr);
    assert!(
        all.contains("requesters.support-agent.retention_mode"),
        "{all}"
    );
    assert!(all.contains("retention_mode: forever"), "{all}");

    // doctor reports them too.
    let d = r.run(&["doctor", "--format", "json"]);
    assert_eq!(exchange_findings(&d.json()).len(), 3, "{}", d.describe());

    // The exchange refuses the policy, with the first it reads (members are checked
    // for typos before their values): one validate has already reported.
    let req = r.request_run(&["-o", r.file("q.json").to_str().unwrap()]);
    let refused = if req.code == 0 {
        r.evaluate("q.json", "d.json", 1)
    } else {
        req
    };
    assert_ne!(refused.code, 0, "{}", refused.describe());
    let said = format!("{}{}", refused.stdout, refused.stderr);
    assert!(said.contains("INVALID_EXCHANGE_POLICY"), "{said}");
    assert!(
        said.contains(&format!("{}: unknown member", fields[2])),
        "{said}"
    );
}

#[test]
fn a_sound_policy_adds_no_finding() {
    let r = ClRepo::init();
    let v = r.run(&["validate", "--format", "json"]);
    assert_eq!(
        exchange_findings(&v.json()),
        Vec::<Value>::new(),
        "{}",
        v.describe()
    );
}

#[test]
fn a_key_reference_the_exchange_could_not_sign_with_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let init = crate::support::ctx(dir.path(), &["init"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    let r = ClRepo::configure(dir, POLICY);
    let manifest = r.file("opencontext.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("issuer_key: t-bundle", "issuer_key: t-anchor"),
    )
    .unwrap();
    let v = r.run(&["validate", "--format", "json"]);
    assert_eq!(v.code, 1, "{}", v.describe());
    let found = exchange_findings(&v.json());
    assert_eq!(found.len(), 1, "{}", v.describe());
    assert_eq!(found[0]["field"], "extensions.ctx.exchange.issuer_key");
    assert_eq!(found[0]["line"].as_u64(), Some(line_of(&r, "issuer_key:")));
    assert_eq!(found[0]["actual"], "t-anchor");
    assert!(found[0]["message"]
        .as_str()
        .unwrap()
        .contains("declared for anchor signatures, not bundle"));
}
