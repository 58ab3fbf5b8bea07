//! End-to-end tests: the real `ctx` binary against fixture repositories.
//! One integration-test binary (modules below) keeps link time low.

mod support;

mod adapters;
mod bad_input;
mod core;
mod examples;
mod exchange;
mod exchange_bad_input;
mod exchange_conformance;
mod exchange_receipts;
mod ops_doctor;
mod ops_git;
mod ops_misc;
mod ops_support;
mod ops_write;
mod private;
mod readme;
mod resolve;
mod signing;
