//! `ctx version`.

use ctx_core::error::{Exit, Result};

use super::Printer;

pub fn run(p: &Printer) -> Result<Exit> {
    super::io_result(p.out(&format!(
        "ctx {}\nOpenContext specification {}\n",
        env!("CARGO_PKG_VERSION"),
        ctx_core::SPEC_VERSION
    )))?;
    Ok(Exit::Ok)
}
