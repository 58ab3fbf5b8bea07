//! The files of a new team repository: a manifest with two roles of different
//! scope (so the permission model is visible from the start) and four objects.

/// The files of a new repository, as (relative path, contents).
pub fn template(id: &str, name: &str, today: &str) -> Vec<(&'static str, String)> {
    let manifest = format!(
        r#"# OpenContext repository. Check it with `ctx validate --strict`;
# see what a role may read with `ctx resolve --role support --task "refund" --explain`.
opencontext: "1.0"
id: {id}
name: {name}

context:
  mission: ./context/mission.md

collections:
  policies: ./context/policies/**
  procedures:
    source: ./context/procedures/**
    type: procedure
    layer: L4

roles:
  everyone:
    description: What every person and agent may read.
    include: [mission]
  support:
    description: Front-line support; internal policies stay out of scope.
    inherits: [everyone]
    include: [policies.*, procedures.*]
    exclude: [policies.internal.*]
  leads:
    description: Team leads; everything up to confidential.
    inherits: [everyone]
    include: ["*"]
    max_classification: confidential

agents:
  support-agent:
    roles: [support]

freshness:
  default_ttl: 365d

provenance:
  required: true

# `ctx doctor --strict` (what `ctx init --ci github` runs in CI) fails on warnings too,
# as `ctx validate --strict` does: the lints for mistakes that silently change what a
# consumer sees are warnings (a redaction that hides nothing), or errors in every mode
# when they widen access (an `exclude` that matches nothing keeps nothing out).
health:
  fail_on: warning
"#
    );
    let obj = |id: &str,
               ty: &str,
               layer: &str,
               title: &str,
               owner: &str,
               extra: &str,
               body: &str| {
        format!(
            "---\nid: {id}\ntype: {ty}\nlayer: {layer}\ntitle: {title}\nauthority: canonical\nowner: {owner}\nclassification: internal\nupdated: {today}T00:00:00Z\ncanonical_source: true\n{extra}---\n\n{body}\n"
        )
    };
    vec![
        ("opencontext.yaml", manifest),
        (
            "context/mission.md",
            obj("mission", "mission", "L0", "Why we exist", "founders", "", &format!("{name} exists to serve its customers well. Replace this with your mission.")),
        ),
        (
            "context/policies/refunds.md",
            obj("policies.refunds", "policy", "L3", "Refund policy", "support", "tags: [refunds, billing]\n", "Customers may request a refund within 30 days of purchase."),
        ),
        (
            "context/policies/internal/escalation.md",
            obj("policies.internal.escalation", "policy", "L3", "Escalation thresholds", "leads", "", "Refunds above 1,000 need a lead's approval.")
                .replacen("classification: internal\n", "classification: confidential\n", 1),
        ),
        (
            "context/procedures/refund.md",
            obj("procedures.refund", "procedure", "L4", "How to process a refund", "support", "references: [policies.refunds]\ntags: [refunds]\n", "1. Check the purchase date.\n2. Apply the refund policy.\n3. Record the outcome on the ticket."),
        ),
    ]
}
