//! End-to-end tests: the real `ctx` binary against fixture repositories.
//! One integration-test binary (modules below) keeps link time low.

mod support;

mod core;
mod private;
