//! End-to-end tests: the real `ctx` binary against fixture repositories.
//! One integration-test binary (modules below) keeps link time low.

mod support;

mod add_supersede;
mod adapters;
mod bad_input;
mod examples;
mod export;
mod health;
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
}
