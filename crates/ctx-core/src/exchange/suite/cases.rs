//! The suite's checks, one per `check` name in the index.

use serde_json::{json, Value};

use super::{cl, Check, Harness, Suite};
use crate::exchange::consumer::{ActionResult, ExecOutcome};
use crate::exchange::ops::bundles;
use crate::exchange::ops::discover::{self, DiscoverOptions};
use crate::exchange::ops::ledger;
use crate::exchange::ops::proposals::{self, CommitOptions, Transition};
use crate::exchange::ops::request;
use crate::exchange::state::{self, Kind};
use crate::exchange::{canon, wire, SpecVersion};

pub(super) fn run(s: &Suite, h: &Harness, case: &Value) -> Check<()> {
    match case["check"].as_str().unwrap_or("") {
        "expired-request" => expired_request(h, case),
        "other-recipient" => other_recipient(h, case),
        "scope-reduction" => scope_reduction(h, case),
        "denied-payload-absent" => denied_payload_absent(s, h, case),
        "provenance" => provenance(h, case),
        "instructions-cannot-widen" => instructions_cannot_widen(h, case),
        "receipts-fail-closed" => receipts_fail_closed(h, case),
        "replay" => replay(h, case),
        "pending-without-provenance" => pending_without_provenance(h, case),
        "contradiction-preserved" => contradiction_preserved(h, case),
        "discovery-budget" => discovery_budget(h, case),
        "no-secrets-in-errors-and-receipts" => no_secrets(s, h, case),
        "wire-round-trip" => wire_round_trip(h, case),
        "logs-clean" => logs_clean(s, h, case),
        other => Err(format!("unknown check {other:?}")),
    }
}

fn expect_code<T>(what: &str, r: crate::exchange::ClResult<T>, code: &str) -> Check<String> {
    match r {
        Ok(_) => Err(format!("{what}: expected {code}, but it succeeded")),
        Err(e) if e.code == code => Ok(e.message),
        Err(e) => Err(format!(
            "{what}: expected {code}, got {}: {}",
            e.code, e.message
        )),
    }
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|x| {
            x["predicate"]
                .as_str()
                .or(x.as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

fn expired_request(h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let req = h.request(case);
    let e = &case["expect"];
    let report = request::validate(&ex, &req, h.clock);
    if !report.problems.iter().any(|p| p.code == e["validate"]) {
        return Err(format!(
            "validate did not report {}: {:?}",
            e["validate"], report.problems
        ));
    }
    let d = cl("evaluate", h.evaluate(&ex, &req))?;
    let dec = &d.evaluation.decision;
    if dec["decision"] != e["decision"]
        || !dec["reason_codes"]
            .as_array()
            .is_some_and(|a| a.contains(&e["reason"]))
    {
        return Err(format!(
            "decision {} {}",
            dec["decision"], dec["reason_codes"]
        ));
    }
    expect_code(
        "issue",
        h.issue(&ex, dec),
        e["issue_error"].as_str().unwrap_or(""),
    )?;
    Ok(())
}

fn other_recipient(h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let issued = h.bundle(&ex, case)?;
    let code = case["expect"]["error"].as_str().unwrap_or("");
    for who in case["impostors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        expect_code(
            who,
            bundles::open(&ex, &h.as_consumer(&issued.envelope, who, 2)),
            code,
        )?;
    }
    cl(
        "open by the recipient",
        bundles::open(&ex, &h.as_consumer(&issued.envelope, "helper", 3)),
    )?;
    Ok(())
}

fn scope_reduction(h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let d = cl("evaluate", h.evaluate(&ex, &h.request(case)))?;
    let dec = &d.evaluation.decision;
    let e = &case["expect"];
    let pairs = [
        (
            "granted_selectors",
            names(&dec["granted_selectors"]),
            names(&e["granted_selectors"]),
        ),
        (
            "denied_selectors",
            names(&dec["denied_selectors"]),
            names(&e["denied_selectors"]),
        ),
        (
            "granted_actions",
            names(&dec["granted_actions"]),
            names(&e["granted_actions"]),
        ),
        (
            "denied_actions",
            names(&dec["denied_actions"]),
            names(&e["denied_actions"]),
        ),
        (
            "reason_codes",
            names(&dec["reason_codes"]),
            names(&e["reason_codes"]),
        ),
    ];
    if dec["decision"] != e["decision"] {
        return Err(format!(
            "decision is {}, expected {}",
            dec["decision"], e["decision"]
        ));
    }
    for (k, got, want) in pairs {
        if got != want {
            return Err(format!("{k}: got {got:?}, expected {want:?}"));
        }
    }
    // The reduced decision still issues a bundle with only the granted scope.
    let issued = cl("issue", h.issue(&ex, dec))?;
    let preds: Vec<String> = names(&issued.envelope["bundle"]["context"]);
    if preds.iter().any(|p| p != "refund-rules") {
        return Err(format!("the bundle carries other predicates: {preds:?}"));
    }
    Ok(())
}

fn denied_payload_absent(s: &Suite, h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let issued = h.bundle(&ex, case)?;
    let text = std::fs::read_to_string(&issued.path).map_err(|e| e.to_string())?;
    let compact = serde_json::to_string(&issued.envelope).expect("JSON");
    for f in s.sentinels.iter().chain(
        case["forbidden_fragments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .iter(),
    ) {
        if text.contains(f.as_str()) || compact.contains(f.as_str()) {
            return Err(format!("the serialized envelope contains {f:?}"));
        }
    }
    if issued.envelope["bundle"]["context"]
        .as_array()
        .is_none_or(|a| a.is_empty())
    {
        return Err("the bundle carries no context at all".into());
    }
    Ok(())
}

fn provenance(h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let issued = h.bundle(&ex, case)?;
    let b = &issued.envelope["bundle"];
    let map = state::read_json(
        &ex.state
            .path(Kind::Provenance, &state::name_of(&issued.bundle_id)),
    )
    .map_err(|e| e.message)?;
    for c in b["context"].as_array().into_iter().flatten() {
        let id = c["value"]["id"].as_str().unwrap_or("");
        let handles: Vec<&str> = c["provenance_handles"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if handles.is_empty() || handles.iter().any(|x| b["provenance"].get(*x).is_none()) {
            return Err(format!("{id}: provenance handles missing from the bundle"));
        }
        let sources: Vec<&str> = handles.iter().filter_map(|x| map[*x].as_str()).collect();
        if !sources.contains(&format!("ctx:object:{id}").as_str()) {
            return Err(format!("{id}: its handles do not resolve to the object inside the repository ({sources:?})"));
        }
        if let Some(want) = case["expect"]["sources"].get(id) {
            let want: Vec<&str> = want
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if want.iter().any(|w| !sources.contains(w)) {
                return Err(format!("{id}: expected sources {want:?}, got {sources:?}"));
            }
        }
    }
    Ok(())
}

fn instructions_cannot_widen(h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let issued = h.bundle(&ex, case)?;
    let text = serde_json::to_string(&issued.envelope).expect("JSON");
    if !text.contains("granted email.send") {
        return Err(
            "the fixture's injected instruction is not in the bundle, so this case proves nothing"
                .into(),
        );
    }
    let o = h.as_consumer(&issued.envelope, "helper", 2);
    cl("open", bundles::open(&ex, &o))?;
    let mut ran = false;
    let action = case["action"].as_str().unwrap_or("email.send");
    expect_code(
        action,
        bundles::exec(&ex, &o, action, |_| {
            ran = true;
            ActionResult {
                success: true,
                output_digest: canon::digest(&json!("sent")),
            }
        }),
        case["expect"]["error"].as_str().unwrap_or(""),
    )?;
    if ran {
        return Err("the unauthorized action ran".into());
    }
    let ok = cl(
        "granted action",
        bundles::exec(&ex, &o, "model.generate_text", |_| ActionResult {
            success: true,
            output_digest: canon::digest(&json!("drafted")),
        }),
    )?;
    match ok.outcome {
        ExecOutcome::Success { .. } => Ok(()),
        _ => Err("the granted action did not succeed".into()),
    }
}

fn receipts_fail_closed(h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let issued = h.bundle(&ex, case)?;
    let o = h.as_consumer(&issued.envelope, "helper", 2);
    cl("open", bundles::open(&ex, &o))?;
    let log = ex.state.log_path();
    let aside = log.with_extension("aside");
    let break_log = || -> std::io::Result<()> {
        std::fs::rename(&log, &aside)?;
        std::fs::create_dir(&log)
    };
    let mend_log = || -> std::io::Result<()> {
        std::fs::remove_dir(&log)?;
        std::fs::rename(&aside, &log)
    };
    break_log().map_err(|e| e.to_string())?;
    let mut ran = false;
    let r = bundles::exec(&ex, &o, "model.generate_text", |_| {
        ran = true;
        ActionResult {
            success: true,
            output_digest: canon::digest(&json!(1)),
        }
    });
    if r.is_ok() || ran {
        return Err("an action ran although the receipt path was unavailable".into());
    }
    mend_log().map_err(|e| e.to_string())?;
    let report = cl(
        "exec",
        bundles::exec(&ex, &o, "model.generate_text", |_| {
            let _ = break_log();
            ActionResult {
                success: true,
                output_digest: canon::digest(&json!(2)),
            }
        }),
    )?;
    let ExecOutcome::Indeterminate { receipt, .. } = &report.outcome else {
        return Err(
            "a success whose receipt could not be stored was not reported indeterminate".into(),
        );
    };
    mend_log().map_err(|e| e.to_string())?;
    expect_code(
        "dependent action",
        bundles::exec(&ex, &o, "model.generate_text", |_| ActionResult {
            success: true,
            output_digest: canon::digest(&json!(3)),
        }),
        "INDETERMINATE_OUTCOME_PENDING",
    )?;
    let retried = cl("retry", ledger::retry(&ex))?;
    let again = cl("retry again", ledger::retry(&ex))?;
    if retried.completed != vec![receipt["id"].as_str().unwrap_or("").to_string()]
        || !again.completed.is_empty()
    {
        return Err(format!(
            "retry completed {:?} then {:?}",
            retried.completed, again.completed
        ));
    }
    let n = cl("verify", ledger::verify(&ex))?
        .receipts()
        .filter(|r| r["id"] == receipt["id"])
        .count();
    if n != 1 {
        return Err(format!("the retried receipt is in the log {n} times"));
    }
    cl(
        "action after recovery",
        bundles::exec(&ex, &o, "model.generate_text", |_| ActionResult {
            success: true,
            output_digest: canon::digest(&json!(4)),
        }),
    )?;
    Ok(())
}

fn replay(h: &Harness, case: &Value) -> Check<()> {
    let code = case["expect"]["error"].as_str().unwrap_or("");
    let envelope = {
        let repo = h.load()?;
        let ex = h.exchange(&repo)?;
        let issued = h.bundle(&ex, case)?;
        let o = h.as_consumer(&issued.envelope, "helper", 2);
        cl("first open", bundles::open(&ex, &o))?;
        expect_code(
            "second open",
            bundles::open(&ex, &h.as_consumer(&issued.envelope, "helper", 3)),
            code,
        )?;
        issued.envelope
    };
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    expect_code(
        "open after a restart",
        bundles::open(&ex, &h.as_consumer(&envelope, "helper", 4)),
        code,
    )?;
    Ok(())
}

fn proposed(h: &Harness, case: &Value, with_source: bool) -> Check<(Value, Value)> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let issued = h.bundle(&ex, case)?;
    let o = h.as_consumer(&issued.envelope, "helper", 2);
    cl("open", bundles::open(&ex, &o))?;
    let mut candidate = case["candidate"].clone();
    if with_source {
        let handle = issued.envelope["bundle"]["context"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["value"]["id"] == "policies.refunds")
            .and_then(|c| c["provenance_handles"][0].as_str())
            .ok_or("the bundle does not disclose policies.refunds")?;
        candidate["provenance_handles"] = json!([handle]);
    }
    let (p, _) = cl("propose", proposals::submit(&ex, &o, &candidate))?;
    Ok((p, issued.envelope))
}

fn pending_without_provenance(h: &Harness, case: &Value) -> Check<()> {
    let (p, _) = proposed(h, case, false)?;
    if p["status"] != "pending_validation"
        || !p["approval_requirement"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("source_required")))
    {
        return Err(format!(
            "status {} requirement {}",
            p["status"], p["approval_requirement"]
        ));
    }
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let id = p["id"].as_str().unwrap_or("");
    expect_code(
        "approve",
        proposals::transition(
            &ex,
            id,
            Transition::Approve,
            "urn:ctx:reviewer:suite",
            "",
            h.at(5),
        ),
        "PROPOSAL_SOURCE_REQUIRED",
    )?;
    let now = cl("show", proposals::show(&ex, id, h.at(6)))?;
    if now.status != "pending_validation" {
        return Err(format!("status became {}", now.status));
    }
    expect_code(
        "commit",
        proposals::commit(&ex, &commit_options(id, h, 7)),
        "PROPOSAL_STATE_INVALID",
    )?;
    Ok(())
}

fn commit_options(id: &str, h: &Harness, s: i64) -> CommitOptions {
    CommitOptions {
        id: id.into(),
        reviewer: "urn:ctx:reviewer:suite".into(),
        committer: "suite".into(),
        kind: None,
        authority: None,
        promote: false,
        dry_run: false,
        at: h.at(s),
    }
}

fn contradiction_preserved(h: &Harness, case: &Value) -> Check<()> {
    let (p, _) = proposed(h, case, true)?;
    let id = p["id"].as_str().unwrap_or("").to_string();
    let before = std::fs::read_to_string(h.root.join("context/policies/refunds.md"))
        .map_err(|e| e.to_string())?;
    {
        let repo = h.load()?;
        let ex = h.exchange(&repo)?;
        cl(
            "approve",
            proposals::transition(
                &ex,
                &id,
                Transition::Approve,
                "urn:ctx:reviewer:suite",
                "",
                h.at(5),
            ),
        )?;
        let done = cl("commit", proposals::commit(&ex, &commit_options(&id, h, 6)))?;
        if done.objects != vec!["policies.refunds@2".to_string()] {
            return Err(format!("committed {:?}", done.objects));
        }
    }
    let old = std::fs::read_to_string(h.root.join("context/policies/refunds.md"))
        .map_err(|e| e.to_string())?;
    let new = std::fs::read_to_string(h.root.join("context/policies/refunds.v2.md"))
        .map_err(|e| e.to_string())?;
    if !old.contains("within 30 days") || !before.contains("within 30 days") {
        return Err("the earlier claim was changed".into());
    }
    for want in [
        "within 14 days",
        "policies.refunds@1",
        "\"contradicts\"",
        "\"written_by\":\"urn:ctx:agent:helper\"",
    ] {
        if !new.contains(want) {
            return Err(format!("the new version lacks {want}"));
        }
    }
    let repo = h.load()?;
    let versions: Vec<String> = repo
        .objects
        .iter()
        .filter(|o| o.id == "policies.refunds")
        .map(|o| o.key())
        .collect();
    if versions != ["policies.refunds@1", "policies.refunds@2"] {
        return Err(format!("versions on disk: {versions:?}"));
    }
    let errors = crate::validate::validate(
        &repo,
        crate::validate::ValidateOptions {
            strict: false,
            at: None,
        },
    )
    .into_iter()
    .filter(|d| d.severity == crate::diag::Severity::Error)
    .count();
    if errors > 0 {
        return Err(format!(
            "the repository has {errors} validation error(s) after the commit"
        ));
    }
    let ex = h.exchange(&repo)?;
    let status = cl("show", proposals::show(&ex, &id, h.at(7)))?.status;
    if status != "committed" {
        return Err(format!("proposal status is {status}"));
    }
    Ok(())
}

fn discovery_budget(h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let queries: Vec<&str> = case["queries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (i, q) in queries.iter().enumerate() {
        let r = discover::discover(
            &ex,
            &DiscoverOptions {
                query: q.to_string(),
                requester: "helper".into(),
                at: h.at(i as i64),
                version: SpecVersion::V02,
            },
        );
        if i + 1 < queries.len() {
            let v = cl(q, r)?;
            let allowed = ["statement", "categories", "contact_route"];
            if v["reveal"]
                .as_object()
                .is_some_and(|m| m.keys().any(|k| !allowed.contains(&k.as_str())))
                || v.get("score").is_some()
            {
                return Err(format!(
                    "the response reveals more than policy allows: {}",
                    v["reveal"]
                ));
            }
        } else {
            expect_code(q, r, case["expect"]["third_error"].as_str().unwrap_or(""))?;
        }
    }
    Ok(())
}

fn scan(what: &str, text: &str, sentinels: &[String]) -> Check<()> {
    match sentinels.iter().find(|s| text.contains(s.as_str())) {
        Some(s) => Err(format!("{what} contains {s:?}")),
        None => Ok(()),
    }
}

fn no_secrets(s: &Suite, h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let mut messages = Vec::new();
    let d = cl("evaluate", h.evaluate(&ex, &h.request(case)))?;
    match h.issue(&ex, &d.evaluation.decision) {
        Ok(_) => return Err("a bundle was issued for a denied selector".into()),
        Err(e) => messages.push(e.to_string()),
    }
    let good = h.bundle(
        &ex,
        &json!({"request_patch": {"id": "urn:cl:request:suite-secrets-ok"}}),
    )?;
    let mut tampered = good.envelope.clone();
    tampered["bundle"]["context"][0]["value"]["content"] = json!("SENTINEL-DENIED-7F3A");
    for (env, who) in [(&tampered, "helper"), (&good.envelope, "lead-bot")] {
        match bundles::open(&ex, &h.as_consumer(env, who, 2)) {
            Ok(_) => return Err("a tampered or misaddressed envelope opened".into()),
            Err(e) => messages.push(e.to_string()),
        }
    }
    for m in &messages {
        scan("an error message", m, &s.sentinels)?;
    }
    let log = std::fs::read_to_string(ex.state.log_path()).map_err(|e| e.to_string())?;
    scan("the receipt log", &log, &s.sentinels)?;
    for r in cl("verify", ledger::verify(&ex))?.receipts() {
        if r["payload_included"] != false {
            return Err(format!("receipt {} includes a payload", r["id"]));
        }
        if let Some(what) = canon::forbidden_material(r) {
            return Err(format!("receipt {} contains {what}", r["id"]));
        }
    }
    Ok(())
}

fn wire_round_trip(h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let v02 = h.request(case);
    let core = cl("to_core", wire::to_core(&v02))?;
    let mut v01 = wire::to_wire(
        core.as_object().cloned().unwrap_or_default(),
        SpecVersion::V01,
    );
    v01.insert("id".into(), json!("urn:cl:request:suite-wire-01"));
    let v01 = Value::Object(v01);
    let back = cl("back", wire::to_core(&v01))?;
    for k in [
        "requester",
        "recipient",
        "purpose_code",
        "selectors",
        "requested_actions",
        "retention",
        "receipt_requirement",
        "expires_at",
        "subject_ref",
        "task",
    ] {
        if back[k] != v02[k] {
            return Err(format!(
                "{k} changed in the 0.1 round trip: {} vs {}",
                back[k], v02[k]
            ));
        }
    }
    let a = cl("evaluate 0.2", h.evaluate(&ex, &v02))?.evaluation;
    let b = cl("evaluate 0.1", h.evaluate(&ex, &v01))?.evaluation;
    if a.state != b.state
        || a.decision["granted_selectors"] != b.decision["granted_selectors"]
        || a.decision["granted_actions"] != b.decision["granted_actions"]
    {
        return Err("the 0.1 request was decided differently from its 0.2 twin".into());
    }
    if b.decision["spec_version"] != "context-layer/0.1-draft"
        || b.decision.get("valid_until").is_none()
        || b.decision.get("expires_at").is_some()
    {
        return Err("the 0.1 decision is not in the 0.1 wire form (valid_until)".into());
    }
    if a.decision["expires_at"] != b.decision["valid_until"] {
        return Err("the decision expiry changed between wire forms".into());
    }
    let issued = cl("issue 0.1", h.issue(&ex, &b.decision))?;
    if issued.envelope["bundle"]["spec_version"] != "context-layer/0.1-draft" {
        return Err("the bundle of an 0.1 decision is not 0.1".into());
    }
    cl(
        "open 0.1",
        bundles::open(&ex, &h.as_consumer(&issued.envelope, "helper", 2)),
    )?;
    Ok(())
}

fn logs_clean(s: &Suite, h: &Harness, case: &Value) -> Check<()> {
    let repo = h.load()?;
    let ex = h.exchange(&repo)?;
    let issued = h.bundle(&ex, case)?;
    let o = h.as_consumer(&issued.envelope, "helper", 2);
    cl("open", bundles::open(&ex, &o))?;
    cl(
        "exec",
        bundles::exec(&ex, &o, "model.generate_text", |_| ActionResult {
            success: true,
            output_digest: canon::digest(&json!("ok")),
        }),
    )?;
    let mut stack = vec![ex.state.dir.clone()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .flatten()
        {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&p).map_err(|e| e.to_string())?)
                .into_owned();
            scan(&p.display().to_string(), &text, &s.sentinels)?;
            for marker in ["Bearer ", "BEGIN PRIVATE KEY"] {
                if text.contains(marker) {
                    return Err(format!("{} contains {marker:?}", p.display()));
                }
            }
            files += 1;
        }
    }
    if files < 5 {
        return Err(format!(
            "only {files} state files were written; the flow did not run"
        ));
    }
    Ok(())
}
