//! Command-line interface: argument types and one module per command.
//! Every command returns an [`Exit`] or an [`Error`]; `main` maps them to a status.

pub mod add;
#[cfg(feature = "serve")]
pub mod approvals;
pub mod audit;
pub mod completions;
pub mod conflicts;
pub mod conformance;
pub mod diff;
pub mod doctor;
pub mod export;
pub mod findings;
pub mod fmt;
pub mod get;
pub mod graph;
pub mod history;
pub mod hook;
pub mod init;
pub mod keys;
pub mod list;
mod manual;
pub mod personal;
pub mod printer;
pub mod private;
pub mod progress;
pub mod provider;
pub mod redaction;
pub mod resolve;
pub mod schema;
pub mod search;
#[cfg(feature = "serve")]
pub mod serve;
pub mod sign;
pub mod stale;
pub mod supersede;
pub mod validate;
pub mod verify;
pub mod version;
pub mod view;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use ctx_core::error::{Error, Exit, Result};
pub use printer::{ColorChoice, Printer};

/// ctx: resolve exactly the context a role or agent may see, from a git-based
/// OpenContext repository — authorized, fresh, ranked, redacted and digested.
#[derive(Debug, Parser)]
#[command(name = "ctx", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Repository folder or manifest path (default: search upward from here).
    #[arg(short = 'C', long = "dir", global = true, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// When to use colour (NO_COLOR and CLICOLOR are honoured under `auto`).
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// Never reach the network.
    #[arg(long, global = true)]
    pub offline: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the manifest and every object: schema, ids, references, roles, secrets.
    Validate(validate::ValidateArgs),
    /// Resolve the context a role or agent may see for a task (a bundle, or --explain).
    Resolve(resolve::ResolveArgs),
    /// Resolve and always emit the full bundle document.
    Bundle(resolve::ResolveArgs),
    /// Print one object, as the consumer may see it.
    Get(get::GetArgs),
    /// List the objects a consumer may see.
    List(list::ListArgs),
    /// Search what a consumer may read.
    Search(search::SearchArgs),
    /// List the embedded JSON Schemas, or print one.
    Schema(schema::SchemaArgs),
    /// Run a conformance suite (e.g. the official OpenContext fixtures).
    Conformance(conformance::ConformanceArgs),
    /// Create a new repository that passes `validate --strict`.
    Init(init::InitArgs),
    /// Private collections encrypted with age: encrypt, decrypt, edit, rekey, status.
    Private(private::PrivateArgs),
    /// Print the tool version and the supported specification version.
    Version,
    /// Manage signing keys (per user) and the keys a repository trusts.
    Keys(keys::KeysArgs),
    /// Verify bundles, signed receipts and decision records against the repository.
    Verify(verify::VerifyArgs),
    /// Show or verify the hash-chained audit log.
    Audit(audit::AuditArgs),
    /// Sign or verify delegated-provider envelopes (atmem.delegated-context-provider.v1).
    Provider(provider::ProviderArgs),
    /// Validation plus the clock (stale, expired, review overdue, orphaned), per-collection health and a score.
    #[command(long_about = doctor::LONG_ABOUT)]
    Doctor(doctor::DoctorArgs),
    /// Duplicate canonical objects, declared conflicts, duplicate ids, broken supersession.
    Conflicts(conflicts::ConflictsArgs),
    /// Context that is stale, expired, not yet valid or overdue for review.
    Stale(stale::StaleArgs),
    /// Install or remove a git pre-commit hook that validates the staged state.
    Hook(hook::HookArgs),
    /// Declared versions of an object, then the git commits that touched it.
    History(history::HistoryArgs),
    /// Compare two objects (`id@1 id@2`), or the repository at two git revisions (`--rev A..B`).
    Diff(diff::DiffArgs),
    /// The context graph: references, supersession, conflicts, dependencies, owners, sources.
    Graph(graph::GraphArgs),
    /// Write a new object (authorization and schema are checked before anything touches disk).
    Add(add::AddArgs),
    /// Write a new version that supersedes the current one; the previous version stays on disk.
    Supersede(supersede::SupersedeArgs),
    /// Write the resolved context as AGENTS.md, CLAUDE.md or Cursor rules (with --check for CI).
    Export(export::ExportArgs),
    /// Serve a personal vault's HTTP API on loopback (seed 004; docs/personal.md).
    #[cfg(feature = "serve")]
    Serve(serve::ServeArgs),
    /// Answer a running `ctx serve`'s approval questions from another terminal.
    #[cfg(feature = "serve")]
    Approvals(approvals::ApprovalsArgs),
    /// Create the repository's redaction key (the secret that keys `mode: hash`).
    RedactionKey(redaction::RedactionKeyArgs),
    /// Rewrite object files into canonical form (key order, RFC 3339 timestamps, quoting).
    #[command(long_about = fmt::long_about())]
    Fmt(fmt::FmtArgs),
    /// Print a shell completion script.
    Completions(completions::CompletionsArgs),
    /// Write the man pages into a folder (how man/ is regenerated).
    #[command(name = "__generate-man", hide = true)]
    GenerateMan(completions::GenerateManArgs),
}

/// What every command can see.
#[derive(Debug, Clone)]
pub struct Global {
    pub dir: Option<PathBuf>,
    pub cwd: PathBuf,
    pub offline: bool,
}

/// Map an output error: a closed pipe is not a failure (`ctx list | head -1`).
pub fn io_result(r: std::io::Result<()>) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Error::BrokenPipe),
        Err(e) => Err(Error::io("<output>", &e)),
    }
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<Exit> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", &e))?;
    let g = Global {
        dir: cli.dir.clone(),
        cwd,
        offline: cli.offline,
    };
    let p = Printer::new(cli.color);
    match &cli.command {
        Command::Validate(a) => validate::run(&g, &p, a),
        Command::Resolve(a) => resolve::run(&g, &p, a, false),
        Command::Bundle(a) => resolve::run(&g, &p, a, true),
        Command::Get(a) => get::run(&g, &p, a),
        Command::List(a) => list::run(&g, &p, a),
        Command::Search(a) => search::run(&g, &p, a),
        Command::Schema(a) => schema::run(&p, a),
        Command::Conformance(a) => conformance::run(&g, &p, a),
        Command::Init(a) => init::run(&g, &p, a),
        Command::Private(a) => private::run(&g, &p, a),
        Command::Version => version::run(&p),
        Command::Keys(a) => keys::run(&g, &p, a),
        Command::Verify(a) => verify::run(&g, &p, a),
        Command::Audit(a) => audit::run(&g, &p, a),
        Command::Provider(a) => provider::run(&g, &p, a),
        Command::Doctor(a) => doctor::run(&g, &p, a),
        Command::Conflicts(a) => conflicts::run(&g, &p, a),
        Command::Stale(a) => stale::run(&g, &p, a),
        Command::Hook(a) => hook::run(&g, &p, a),
        Command::History(a) => history::run(&g, &p, a),
        Command::Diff(a) => diff::run(&g, &p, a),
        Command::Graph(a) => graph::run(&g, &p, a),
        Command::Add(a) => add::run(&g, &p, a),
        Command::Supersede(a) => supersede::run(&g, &p, a),
        Command::Export(a) => export::run(&g, &p, a),
        #[cfg(feature = "serve")]
        Command::Serve(a) => serve::run(&g, &p, a),
        #[cfg(feature = "serve")]
        Command::Approvals(a) => approvals::run(&g, &p, a),
        Command::RedactionKey(a) => redaction::run(&g, &p, a),
        Command::Fmt(a) => fmt::run(&g, &p, a),
        Command::Completions(a) => completions::run(&p, a),
        Command::GenerateMan(a) => completions::generate_man(&p, a),
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
