//! The `ctx` binary: parse arguments, run, map the outcome to an exit code.
//! Everything else lives in the `ctx_core` library; `cli` only parses and renders.

mod cli;
#[cfg(feature = "serve")]
mod delegated;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "serve")]
mod serve;

use std::process::ExitCode;

use clap::Parser;
use cli::Cli;
use ctx_core::error::{Error, Exit};

/// A load is ~20 small allocations per object, made on every rayon worker at once:
/// mimalloc's thread-local free lists cut warm validate/resolve at 100k objects by
/// a fifth against glibc malloc (ARCHITECTURE.md, "Allocator").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // `COMPLETE=<shell> ctx ...`: print the registration script or the completions
    // (role, agent and object ids from the repository here), then exit.
    clap_complete::CompleteEnv::with_factory(<Cli as clap::CommandFactory>::command).complete();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { Exit::Usage as u8 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let color = cli.color;
    match cli::run(cli) {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(Error::BrokenPipe) => ExitCode::SUCCESS,
        Err(Error::Manifest { path, diag }) => {
            // The manifest cannot be loaded: the finding with a code frame of its line.
            eprint!("{}", cli::findings::manifest_frame(&path, &diag));
            ExitCode::from(Exit::Invalid as u8)
        }
        Err(e) => {
            // Rendered like findings (message, then hint); `Error::exit` is
            // the one mapping from an error to a status.
            let p = cli::Printer::new(color);
            let style = ctx_core::diag::render::HumanStyle {
                color: p.color_err,
                width: p.width,
            };
            let _ = p.err(&ctx_core::diag::render::error(&e, style));
            ExitCode::from(e.exit() as u8)
        }
    }
}
