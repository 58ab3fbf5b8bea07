//! The command line as clap sees it: the global flags and one variant per command.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::*;

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
    /// Delegated-provider envelopes (atmem.delegated-context-provider.v1) and the authenticated loopback provider.
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
    /// Sign off the canonical or approved authority an object declares (recorded in .ctx/signoffs/).
    Promote(promote::PromoteArgs),
    /// Write the resolved context as an agent file: AGENTS.md, CLAUDE.md, GEMINI.md, Copilot, Cursor or Windsurf rules (--check for CI).
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
    /// Serve a personal vault's HTTP API (seed 004) and/or the Context Layer HTTP binding (seed 000) on loopback.
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
