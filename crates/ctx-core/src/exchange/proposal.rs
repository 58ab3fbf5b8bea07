//! Memory update proposals (0.2-draft §7.7, §9.4; local-core profile §6):
//! a consumer with `memory.propose` may submit a candidate change through its
//! session. It is recorded as `pending_validation`, never written; without
//! provenance it also needs `source_required`. Direct-write members are refused.

use serde_json::{json, Map, Value};

use super::canon;
use super::consumer::Session;
use super::error::{fail, ClResult};
use super::receipts::{self, ReceiptLog};
use super::schema::{self, ClKind};
use super::wire::{self, SpecVersion};
use crate::time::Instant;

/// Id prefix of proposals.
pub const PROPOSAL_PREFIX: &str = "urn:cl:proposal:";
/// Operations a consumer may propose.
pub const OPERATIONS: [&str; 4] = ["add", "add_or_contradict", "supersede", "retract"];
const CANDIDATE_MEMBERS: [&str; 4] = [
    "operation",
    "proposed_claims",
    "provenance_handles",
    "rationale",
];

/// The profile's checks on a finalized proposal as submitted.
pub fn validate(p: &Value) -> ClResult<()> {
    if !p.is_object() {
        return fail(
            "INVALID_MEMORY_PROPOSAL",
            "proposal: expected a JSON object",
        );
    }
    canon::verify_record(p, PROPOSAL_PREFIX, "proposal")?;
    let core = wire::to_core(p)?;
    if core["type"] != "memory_update_proposal" || core["status"] != "pending_validation" {
        return fail(
            "INVALID_MEMORY_PROPOSAL",
            "a submitted memory update must be a memory_update_proposal with status pending_validation",
        );
    }
    if let Some(what) = canon::forbidden_material(p) {
        return fail(
            "MEMORY_PROPOSAL_CONTAINS_FORBIDDEN_MATERIAL",
            format!("the proposal contains {what}: proposals never carry raw-vault or direct-write members"),
        );
    }
    let confirms = core["approval_requirement"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == "user_confirm"));
    if !confirms {
        return fail(
            "MEMORY_PROPOSAL_APPROVAL_REQUIRED",
            "a proposal must require user confirmation (approval_requirement includes user_confirm)",
        );
    }
    if let Some(why) = schema::summary(ClKind::MemoryUpdateProposal, &core) {
        return fail(
            "INVALID_MEMORY_PROPOSAL",
            format!("proposal does not have the closed shape: {why}"),
        );
    }
    Ok(())
}

/// Submit a candidate through an open session. Writes a `memory.propose`
/// receipt; returns the finalized pending proposal (the caller stores it).
pub fn propose(
    session: &Session,
    log: &ReceiptLog,
    candidate: &Value,
    at: Instant,
    revocation: Option<super::envelope::RevocationCheck<'_>>,
) -> ClResult<Value> {
    session.check_capability("memory.propose")?;
    session.assert_active(at, revocation)?;
    log.preflight()?;
    let Some(c) = candidate.as_object() else {
        return fail(
            "INVALID_MEMORY_PROPOSAL",
            "the candidate must be a JSON object",
        );
    };
    if let Some(what) = canon::forbidden_material(candidate) {
        return fail(
            "MEMORY_PROPOSAL_CONTAINS_FORBIDDEN_MATERIAL",
            format!("the candidate contains {what}: memory enters only as a proposal, never as a direct write"),
        );
    }
    if let Some(k) = c.keys().find(|k| !CANDIDATE_MEMBERS.contains(&k.as_str())) {
        return fail(
            "INVALID_MEMORY_PROPOSAL",
            format!(
                "unknown candidate member `{k}` (allowed: {})",
                CANDIDATE_MEMBERS.join(", ")
            ),
        );
    }
    let operation = c
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or("add_or_contradict");
    if !OPERATIONS.contains(&operation) {
        return fail(
            "INVALID_MEMORY_OPERATION",
            format!(
                "operation {operation:?} is not one of {}",
                OPERATIONS.join(", ")
            ),
        );
    }
    let claims = c.get("proposed_claims").and_then(Value::as_array);
    let Some(claims) = claims.filter(|a| !a.is_empty()) else {
        return fail(
            "PROPOSED_CLAIMS_REQUIRED",
            "a proposal needs at least one proposed claim",
        );
    };
    let mut refs: Vec<String> = Vec::new();
    for h in c
        .get("provenance_handles")
        .map(|v| v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]))
        .unwrap_or_default()
    {
        let Some(h) = h.as_str().filter(|s| !s.is_empty()) else {
            return fail(
                "INVALID_STRING_LIST",
                "provenance_handles must be non-empty strings",
            );
        };
        let Some(r) = session.bundle["provenance"][h]["ref"].as_str() else {
            return fail(
                "UNKNOWN_PROVENANCE_HANDLE",
                format!("provenance handle {h:?} is not one this bundle disclosed"),
            );
        };
        if !refs.iter().any(|x| x == r) {
            refs.push(r.to_string());
        }
    }
    let Some(rationale) = c
        .get("rationale")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return fail("INVALID_STRING", "rationale must be a non-empty string");
    };
    let b = &session.bundle;
    let requirement = if refs.is_empty() {
        json!(["source_required", "user_confirm"])
    } else {
        json!(["user_confirm"])
    };
    let mut m = Map::new();
    m.insert("spec_version".into(), json!(SpecVersion::V02.id()));
    m.insert("type".into(), json!("memory_update_proposal"));
    m.insert("created_at".into(), json!(canon::iso_ms(&canon::to_ms(at))));
    m.insert("issuer".into(), json!({"id": session.principal}));
    m.insert("subject_ref".into(), b["subject_alias"].clone());
    m.insert("bundle_ref".into(), json!(session.bundle_id));
    m.insert("operation".into(), json!(operation));
    m.insert("proposed_claims".into(), Value::Array(claims.clone()));
    m.insert("provenance_refs".into(), json!(refs));
    m.insert("rationale".into(), json!(rationale));
    m.insert("submitted_by".into(), json!(session.principal));
    m.insert("status".into(), json!("pending_validation"));
    m.insert("approval_requirement".into(), requirement);
    m.insert("expires_at".into(), b["expires_at"].clone());
    let proposal = canon::finalize(wire::to_wire(m, session.version()), PROPOSAL_PREFIX);
    validate(&proposal)?;
    let mut d = session.draft(
        "memory.propose",
        "success",
        "Submitted a pending memory update proposal for review.",
    );
    d.input_digest = Some(canon::digest(
        &json!({"operation": operation, "proposed_claim_count": claims.len()}),
    ));
    d.output_digest = proposal["integrity"]["digest"].as_str().map(str::to_string);
    let mut meta = Map::new();
    meta.insert("proposal_ref".into(), proposal["id"].clone());
    meta.insert("status".into(), json!("pending_validation"));
    d.metadata = meta;
    let receipt = receipts::build(&d, at, session.version())?;
    log.append(&receipt).map_err(|e| {
        super::error::ClError::new(
            "MEMORY_PROPOSAL_RECEIPT_FAILED",
            format!("the memory.propose receipt could not be made durable ({}); the proposal was not recorded", e.code),
        )
    })?;
    Ok(proposal)
}
