//! `ctx exchange issue|open|revoke|exec|keys` and the hidden `kit-adapter`:
//! the bundle side of the Context Layer exchange.

use std::io::{BufRead, Write};

use clap::{Args, Subcommand};

use ctx_core::error::{Error, Exit, Result};
use ctx_core::exchange::kit;

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ExchangeArgs {
    #[command(subcommand)]
    pub command: ExchangeCommand,
}

#[derive(Debug, Subcommand)]
pub enum ExchangeCommand {
    /// Speak the Context Layer conformance kit's adapter contract on stdin/stdout.
    #[command(name = "kit-adapter", hide = true)]
    KitAdapter,
}

pub fn run(_g: &Global, _p: &Printer, a: &ExchangeArgs) -> Result<Exit> {
    match &a.command {
        ExchangeCommand::KitAdapter => kit_adapter(),
    }
}

/// One JSON line in, one JSON line out (diagnostics never go to stdout).
fn kit_adapter() -> Result<Exit> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Error::io("<stdin>", &e))?;
    let response = kit::handle_line(&line);
    let mut out = std::io::stdout().lock();
    let text = serde_json::to_string(&response).expect("JSON value") + "\n";
    super::io_result(out.write_all(text.as_bytes()).and_then(|()| out.flush()))?;
    Ok(Exit::Ok)
}
