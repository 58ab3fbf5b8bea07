//! End-to-end tests: the real `ctx` binary against fixture repositories.
//! One integration-test binary (modules below) keeps link time low.

mod support;

mod adapters;
mod bad_input;
mod core;
mod examples;
mod private;
mod readme;
mod resolve;
mod signing;
