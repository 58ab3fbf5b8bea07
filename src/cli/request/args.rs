//! The arguments of `ctx request new|validate|evaluate`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use ctx_core::exchange::SpecVersion;

use crate::cli::exchange::CommonArgs;

#[derive(Debug, Args)]
pub struct RequestArgs {
    #[command(subcommand)]
    pub command: RequestCommand,
}

#[derive(Debug, Subcommand)]
pub enum RequestCommand {
    /// Write a new context request (checked before it is stored under .ctx/exchange/requests/).
    New(Box<NewArgs>),
    /// Check a request: schema, expiry, creation time, purpose code, wildcards, receipts, requester.
    Validate(ValidateArgs),
    /// Evaluate a request against the repository's policy: allow, allow_with_reductions, deny or needs_approval.
    #[command(
        long_about = "Evaluate a request against the repository's exchange policy and write the policy_decision.\n\nExit status: 0 allow or allow_with_reductions, 4 deny, 5 needs_approval (run `ctx approve`), 1 invalid input, 3 not found."
    )]
    Evaluate(EvaluateArgs),
}

fn parse_version(s: &str) -> std::result::Result<SpecVersion, String> {
    SpecVersion::parse(s).ok_or_else(|| format!("`{s}`: expected 0.2-draft or 0.1-draft"))
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The requester: an agent name, `role:<name>` or a principal URI.
    #[arg(long = "as", value_name = "REQUESTER")]
    pub requester: String,
    /// Who receives the context (default: the requester).
    #[arg(long)]
    pub recipient: Option<String>,
    /// May the recipient pass the context on? (`forbidden` or `allowed`)
    #[arg(long, default_value = "forbidden", value_parser = ["forbidden", "allowed"])]
    pub onward: String,
    /// Registered purpose code (e.g. draft.response, retrieve.context) or `x.`-namespaced.
    #[arg(long)]
    pub purpose_code: String,
    /// Free text explaining the purpose (informative only; never authorizes).
    #[arg(long)]
    pub purpose: Option<String>,
    /// Task kind (a lowercase name the policy lists, e.g. draft_only).
    #[arg(long, default_value = "retrieve_only")]
    pub task: String,
    /// The task's result is not shown to a person.
    #[arg(long)]
    pub hidden: bool,
    /// A selector: a predicate declared in ctx.exchange.predicates, or an object id (repeatable).
    #[arg(long = "select", value_name = "NAME", required = true)]
    pub selectors: Vec<String>,
    /// A requested action (repeatable, e.g. model.generate_text, memory.propose).
    #[arg(long = "action", value_name = "ACTION")]
    pub actions: Vec<String>,
    /// How long the recipient may keep the context, in seconds.
    #[arg(long, default_value_t = 600)]
    pub retention: u64,
    /// Retention mode: ephemeral (kept at most --retention seconds) or single_use.
    #[arg(long, default_value = "ephemeral", value_parser = ["ephemeral", "single_use"])]
    pub retention_mode: String,
    /// Receipt requirement: none, decision or operation.
    #[arg(long, default_value = "operation", value_parser = ["none", "decision", "operation"])]
    pub receipts: String,
    /// How long the request stays valid (e.g. 10m, 1h).
    #[arg(long, default_value = "10m")]
    pub expires_in: String,
    /// Wire form to write.
    #[arg(long, default_value = "0.2-draft", value_parser = parse_version)]
    pub spec_version: SpecVersion,
    /// Write the request here (atomically) instead of to stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The request file (`-` for stdin).
    pub file: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The request file (`-` for stdin).
    pub file: PathBuf,
    /// An approval written by `ctx approve` for this request.
    #[arg(long)]
    pub approval: Option<PathBuf>,
    /// Wire form of the decision (default: the request's own).
    #[arg(long, value_parser = parse_version)]
    pub spec_version: Option<SpecVersion>,
    /// Write the decision here (atomically) instead of to stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}
