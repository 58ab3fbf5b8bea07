//! Command-line interface: argument types and one module per command.
//! Every command returns an [`Exit`] or an [`Error`]; `main` maps them to a status.

pub mod add;
#[cfg(feature = "serve")]
pub mod approvals;
pub mod approve;
pub mod args;
pub mod audit;
pub mod command;
pub mod completions;
pub mod conflicts;
pub mod conformance;
pub mod diff;
pub mod discover;
pub mod doctor;
pub mod exchange;
pub mod export;
pub mod findings;
pub mod fmt;
pub mod gate;
pub mod get;
pub mod global;
pub mod graph;
pub mod history;
pub mod hook;
pub mod init;
pub mod input;
pub mod keys;
pub mod list;
mod manual;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod personal;
pub mod printer;
pub mod private;
pub mod progress;
pub mod promote;
pub mod proposals;
pub mod propose;
pub mod provider;
pub mod receipts;
pub mod redaction;
pub mod request;
pub mod resolve;
pub mod schema;
pub mod search;
#[cfg(feature = "serve")]
pub mod serve;
pub mod sign;
pub mod stale;
pub mod supersede;
pub mod validate;
pub mod vault_upgrade;
pub mod verify;
pub mod version;

pub use command::{Cli, Command};
use ctx_core::error::{Error, Exit, Result};
pub use global::{io_result, Global};
pub use printer::{ColorChoice, Printer};

/// Hand a large loaded value to the process exit instead of freeing it: freeing a
/// 100k-object repository value by value took a tenth of a run. Commands call it on
/// their way out (the process ends with the command), and only with plain data: no
/// `Drop` with effects (temporary files, locks, zeroizing).
pub fn leave_to_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<Exit> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", &e))?;
    let g = Global {
        dir: cli.dir.clone(),
        cwd,
        offline: cli.offline,
        clock: ctx_core::time::Clock::system(),
        cache: !cli.no_cache && !ctx_core::load::cache_disabled_by_env(),
    };
    let p = Printer::new(cli.color);
    let out = dispatch(&g, &p, &cli.command);
    // A refused write names the findings that stopped it, like `validate` would.
    if let Err(Error::Refused { findings, .. }) = &out {
        global::report_refused(&g, &p, findings);
    }
    out
}

fn dispatch(g: &Global, p: &Printer, command: &Command) -> Result<Exit> {
    match command {
        Command::Validate(a) => validate::run(g, p, a),
        Command::Resolve(a) => resolve::run(g, p, a, false),
        Command::Bundle(a) => resolve::run(g, p, a, true),
        Command::Get(a) => get::run(g, p, a),
        Command::List(a) => list::run(g, p, a),
        Command::Search(a) => search::run(g, p, a),
        Command::Schema(a) => schema::run(p, a),
        Command::Conformance(a) => conformance::run(g, p, a),
        Command::Init(a) => init::run(g, p, a),
        Command::Private(a) => private::run(g, p, a),
        Command::Version => version::run(p),
        Command::Keys(a) => keys::run(g, p, a),
        Command::Verify(a) => verify::run(g, p, a),
        Command::Audit(a) => audit::run(g, p, a),
        Command::Provider(a) => provider::run(g, p, a),
        Command::Doctor(a) => doctor::run(g, p, a),
        Command::Conflicts(a) => conflicts::run(g, p, a),
        Command::Stale(a) => stale::run(g, p, a),
        Command::Hook(a) => hook::run(g, p, a),
        Command::History(a) => history::run(g, p, a),
        Command::Diff(a) => diff::run(g, p, a),
        Command::Graph(a) => graph::run(g, p, a),
        Command::Add(a) => add::run(g, p, a),
        Command::Supersede(a) => supersede::run(g, p, a),
        Command::Promote(a) => promote::run(g, p, a),
        Command::Export(a) => export::run(g, p, a),
        Command::Request(a) => request::run(g, p, a),
        Command::Approve(a) => approve::run(g, p, a),
        Command::Exchange(a) => exchange::run(g, p, a),
        Command::Receipts(a) => receipts::run(g, p, a),
        Command::Propose(a) => propose::run(g, p, a),
        Command::Proposals(a) => proposals::run(g, p, a),
        Command::Discover(a) => discover::run(g, p, a),
        #[cfg(feature = "serve")]
        Command::Serve(a) => serve::run(g, p, a),
        #[cfg(feature = "serve")]
        Command::Approvals(a) => approvals::run(g, p, a),
        Command::RedactionKey(a) => redaction::run(g, p, a),
        Command::Fmt(a) => fmt::run(g, p, a),
        #[cfg(feature = "mcp")]
        Command::Mcp(a) => mcp::run(g, p, a),
        Command::Completions(a) => completions::run(p, a),
        Command::GenerateMan(a) => completions::generate_man(p, a),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
