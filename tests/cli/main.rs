//! End-to-end tests: the real `ctx` binary against fixture repositories.
//! One integration-test binary (modules below) keeps link time low.

// A toolkit for tests: parts of its API may be unused at any given time.
#[allow(dead_code, unused_imports)]
mod support;

mod adapters;
mod add_supersede;
mod bad_input;
mod diff;
mod examples;
mod export;
mod graph;
mod health;
mod history;
mod info;
mod init;
mod list_get;
mod piped_output;
mod pre_commit;
mod private;
mod readme;
mod resolve;
mod signing;
mod validate;

/// The shared fixtures' old module path, kept only so that test files written
/// on other branches against `crate::ops_support` still build once merged.
/// New code uses `crate::support::fixtures`; delete this when nothing uses it.
#[allow(unused_imports)]
mod ops_support {
    pub use crate::support::fixtures::*;
    pub use crate::support::git::{git, have_git, init_git};
}
