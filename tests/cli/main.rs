//! End-to-end tests: the real `ctx` binary against fixture repositories.
//! One integration-test binary (modules below) keeps link time low.
//!
//! # Adding a test
//!
//! Put it in the file named after the feature it tests, or in a new
//! `tests/cli/<feature>.rs` registered below. Start `ctx` only through
//! [`support::ctx_in`] (or its shorthands `ctx`, `ctx_env`, `Repo::ctx`): it
//! runs the binary in a hermetic environment, so nothing of your machine
//! (keys, age identities, `CTX_*`, colour settings, git config) changes a result.
//!
//! ```ignore
//! let repo = Repo::new(&[("opencontext.yaml", MANIFEST), ("context/mission.md", MISSION)]);
//! let r = ctx_in(&repo).args(["get", "mission", "--format", "json"]).run();
//! r.assert_ok();
//! assert_eq!(r.json()["owner"], "founders");
//! insta::assert_snapshot!("get_mission", r.transcript()); // when the whole output matters
//! ```
//!
//! Real git repositories come from [`support::git`] (`init_git`, `commit_all`,
//! `git`); shared fixtures from [`support::fixtures`].
//!
//! # Snapshots
//!
//! Snapshots live in `tests/cli/snapshots/`. After an intended output change,
//! review and accept them with `cargo insta review` (cargo-insta), or rewrite
//! them with `INSTA_UPDATE=always cargo test --test cli` and read the diff.
//! In CI (`CI=true`, `INSTA_UPDATE=no`) a changed or missing snapshot fails.
//!
//! # Tools
//!
//! Tests that need `git`, `age`/`age-keygen` or `ssh-keygen` skip with a note
//! when the tool is missing, and fail instead under `CTX_REQUIRE_INTEROP=1`
//! (as in `.ci/run`): see [`support::tools::require_tool`].

// A toolkit for tests: parts of its API may be unused at any given time.
#[allow(dead_code, unused_imports)]
mod support;

mod access_diff;
mod adapters;
mod add_supersede;
mod approvals_tiers;
mod bad_input;
mod cache;
mod cache_faults;
mod canary;
mod completion_dynamic;
mod crash;
mod diff;
mod distribution;
mod docs_guide;
mod door_equivalence;
mod error_hints;
mod evidence;
mod examples;
mod exchange;
mod exchange_bad_input;
mod exchange_canary;
mod exchange_conformance;
mod exchange_examples;
mod exchange_hints;
mod exchange_keys;
mod exchange_policy_check;
mod exchange_receipts;
mod exchange_seed;
mod explain_causes;
mod export;
mod export_folders;
mod export_targets;
mod fail_closed;
mod files;
mod fmt;
mod graph;
mod health;
mod hidden_chars;
mod history;
mod hook_fail_on;
mod info;
mod init;
mod init_git;
mod install_script;
mod keys_declare;
mod layering;
mod lints;
mod list_get;
mod manual;
mod mcp;
mod mcp_approval;
mod mcp_budget;
mod mcp_canary;
mod mcp_install;
mod mcp_install_docs;
mod mcp_install_safety;
mod mcp_live;
mod mcp_personal;
mod mcp_personal_args;
mod mcp_personal_canary;
mod mcp_python;
mod mcp_registry;
mod mcp_wire;
mod not_found_exits;
mod one_door;
mod personal;
mod piped_output;
mod plugins;
mod pre_commit;
mod private;
mod private_checks;
mod private_from_init;
mod promote;
mod proposals_queue;
mod provider_auth;
mod provider_state;
mod readme;
mod refusal;
mod release;
mod request_output;
mod resolve;
mod resolve_budget;
mod serve_bounds;
mod serve_canary;
mod serve_cl_bounds;
mod serve_context_layer;
mod serve_journey;
mod serve_load;
#[allow(dead_code)]
mod serve_support;
mod serve_vault_compat;
mod signing;
mod sources;
mod spec_lifecycle;
mod spec_musts;
mod spec_outputs;
mod support_team;
mod typed_args;
mod validate;
mod vault_audit;
mod vault_backup;
mod vault_categories;
mod vault_documents;
mod vault_history;
mod vault_keys;
mod vault_limits;
mod vault_lock;
mod vault_mcp;
mod vault_tamper;
mod vault_writes;
mod wheel;
mod write_plan;
mod writers;

/// The shared fixtures' old module path, kept only so that test files written
/// on other branches against `crate::ops_support` still build once merged.
/// New code uses `crate::support::fixtures`; delete this when nothing uses it.
#[allow(unused_imports)]
mod ops_support {
    pub use crate::support::fixtures::*;
    pub use crate::support::git::{git, have_git, init_git};
}
mod walkthroughs;
