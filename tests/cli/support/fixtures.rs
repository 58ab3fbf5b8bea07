//! The shared fixture repository: collections, two roles, an agent with a
//! write grant, a health block, and an object with two declared versions.

use super::Repo;

/// A manifest with collections, two roles, a write grant and a health block.
pub const OPS_MANIFEST: &str = r#"opencontext: "1.0"
id: acme
name: ACME
context:
  mission: ./context/mission.md
collections:
  policies: ./context/policies/**
  pricing: ./context/pricing/**
  notes: ./context/notes/**
roles:
  support:
    include: [mission, policies.*, pricing.*, notes.*]
    exclude: [policies.internal.*]
    extensions:
      ctx.scope:
        reserved_exclude: [policies.internal.*]
  leads:
    include: ["*"]
    max_classification: confidential
agents:
  support-agent:
    roles: [support]
freshness:
  default_ttl: 365d
health:
  minimum_score: 50
extensions:
  ctx.write:
    support-agent: [notes.*]
"#;

pub const MISSION: &str = "---\nid: mission\ntype: mission\nlayer: L0\ntitle: Why we exist\nauthority: canonical\nowner: founders\nupdated: 2026-08-01T00:00:00Z\n---\n\nMake refunds boring.\n";

pub const REFUNDS: &str = "---\nid: policies.refunds\ntype: policy\nlayer: L3\ntitle: Refund policy\nauthority: canonical\nowner: support\nupdated: 2026-08-01T00:00:00Z\n---\n\nRefunds within 30 days.\n";

pub const PRICING_V1: &str = "---\nid: pricing.enterprise\ntype: pricing\nversion: 1\ntitle: Enterprise pricing\nauthority: reference\nowner: sales\nupdated: 2026-01-01T00:00:00Z\nclassification: internal\n---\n\nEnterprise plans start at $1,800/month.\n";

pub const PRICING_V2: &str = "---\nid: pricing.enterprise\ntype: pricing\nversion: 2\nsupersedes: [pricing.enterprise@1]\ntitle: Enterprise pricing\nauthority: canonical\nowner: sales\nupdated: 2026-08-01T00:00:00Z\nclassification: internal\n---\n\nEnterprise plans start at $2,500/month.\n";

pub const WELCOME: &str = "---\nid: notes.welcome\ntype: note\nowner: support\nupdated: 2026-08-01T00:00:00Z\n---\n\nWelcome.\n";

/// The clean fixture repository (valid, healthy at 2026-09-01).
pub fn healthy() -> Repo {
    Repo::new(&[
        ("opencontext.yaml", OPS_MANIFEST),
        ("context/mission.md", MISSION),
        ("context/policies/refunds.md", REFUNDS),
        ("context/pricing/enterprise.md", PRICING_V1),
        ("context/pricing/enterprise.v2.md", PRICING_V2),
        ("context/notes/welcome.md", WELCOME),
    ])
}
