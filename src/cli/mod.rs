//! Command-line interface: argument types and one module per command.
//! Every command returns an [`Exit`] or an [`Error`]; `main` maps them to a status.

pub mod add;
#[cfg(feature = "serve")]
pub mod approvals;
pub mod approve;
pub mod args;
pub mod audit;
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
pub mod graph;
pub mod history;
pub mod hook;
pub mod init;
pub mod keys;
pub mod list;
mod manual;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod personal;
pub mod printer;
pub mod private;
pub mod progress;
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
pub mod verify;
pub mod version;

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
    /// Parse every file afresh: neither read nor write the parse cache (also CTX_NO_CACHE=1).
    #[arg(long, global = true)]
    pub no_cache: bool,
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
    /// Context Layer requests: write, check and evaluate them against the repository's policy.
    Request(request::RequestArgs),
    /// Approve the gated part of a Context Layer request (single-use, bound, expiring).
    Approve(approve::ApproveArgs),
    /// Context Layer bundles: issue, open, revoke, run granted actions.
    Exchange(exchange::ExchangeArgs),
    /// The Context Layer receipt log: list, show, verify, retry, supersede.
    Receipts(receipts::ReceiptsArgs),
    /// Submit agent-written memory as a proposal through an opened bundle.
    Propose(propose::ProposeArgs),
    /// Review memory proposals and commit approved ones.
    Proposals(proposals::ProposalsArgs),
    /// Minimum-reveal discovery: does the repository hold something like QUERY?
    Discover(discover::DiscoverArgs),
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
    /// Serve this repository to AI agents over MCP (stdio); `ctx mcp install` configures a client.
    #[cfg(feature = "mcp")]
    #[command(long_about = mcp::LONG_ABOUT)]
    Mcp(mcp::McpArgs),
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
    /// The one reading of the clock this command makes.
    pub clock: ctx_core::time::Clock,
    /// Use the parse cache (no `--no-cache`, no `CTX_NO_CACHE`).
    pub cache: bool,
}

impl Global {
    /// How to load the repository the global flags point at.
    pub fn load_options(&self, max_file_size: u64) -> ctx_core::load::LoadOptions {
        ctx_core::load::LoadOptions {
            max_file_size,
            cache: self.cache,
            content: true,
            prose: true,
            content_for: None,
        }
    }
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
        clock: ctx_core::time::Clock::system(),
        cache: !cli.no_cache && !ctx_core::load::cache_disabled_by_env(),
    };
    let p = Printer::new(cli.color);
    let out = dispatch(&g, &p, &cli.command);
    // A refused write names the findings that stopped it, like `validate` would.
    if let Err(Error::Refused { findings, .. }) = &out {
        let root = ctx_core::manifest::discover::locate(g.dir.as_deref(), &g.cwd)
            .ok()
            .and_then(|l| l.path.parent().map(std::path::Path::to_path_buf))
            .unwrap_or_else(|| g.cwd.clone());
        let style = ctx_core::diag::render::HumanStyle {
            color: p.color_err,
            width: p.width,
        };
        let _ = p.err(&ctx_core::diag::render::human(findings, &root, style));
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
