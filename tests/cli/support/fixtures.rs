//! Fixtures for the ops tests: a small repository with history, and real git
//! repositories made in temporary folders.

use std::path::Path;
use std::process::Command;

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

/// Is git usable here? Tests that need it say so and pass vacuously otherwise.
pub fn have_git() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: git is not installed; skipping a git test");
    }
    ok
}

/// Run git in `dir` with a fixed identity and no user or system configuration.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Dana Okafor")
        .env("GIT_AUTHOR_EMAIL", "dana@example.com")
        .env("GIT_COMMITTER_NAME", "Dana Okafor")
        .env("GIT_COMMITTER_EMAIL", "dana@example.com")
        .env("GIT_AUTHOR_DATE", "2026-08-01T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-08-01T12:00:00Z")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `git init` + first commit of everything in `dir`.
pub fn init_git(dir: &Path, message: &str) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}
