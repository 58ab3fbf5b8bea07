//! The arguments of `ctx exchange` and its subcommands.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::CommonArgs;

#[derive(Debug, Args)]
pub struct ExchangeArgs {
    #[command(subcommand)]
    pub command: ExchangeCommand,
}

#[derive(Debug, Subcommand)]
pub enum ExchangeCommand {
    /// Issue a signed, recipient-bound bundle from an allowing decision.
    Issue(IssueArgs),
    /// Open a bundle as its recipient (once): verify, record `bundle.consume`, print the context.
    Open(OpenArgs),
    /// Revoke an issued bundle: later opens, actions and proposals are refused.
    Revoke(RevokeArgs),
    /// Run a command as a granted action of an opened bundle.
    Exec(ExecArgs),
    /// Delete the stored context of bundles nobody may use any more (expired,
    /// revoked, or a source deleted), keeping ids and digests.
    Purge(PurgeArgs),
    /// Print the policy object (and its snapshot digest) the repository applies to a requester.
    Policy(PolicyArgs),
    /// Print a key's public half as a `ctx.exchange.keys` entry.
    Keys(KeysArgs),
    /// Speak the Context Layer conformance kit's adapter contract on stdin/stdout.
    #[command(name = "kit-adapter", hide = true)]
    KitAdapter,
}

#[derive(Debug, Args)]
pub struct IssueArgs {
    /// A decision file written by `ctx request evaluate`.
    pub decision: PathBuf,
    /// Bundle signing key id (purpose `bundle`; default: ctx.exchange.issuer_key).
    #[arg(long)]
    pub key: Option<String>,
    /// Also write the envelope here (atomically).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args, Clone)]
pub struct ConsumerArgs {
    /// The envelope file as received.
    pub envelope: PathBuf,
    /// Who is opening: an agent name, `role:<name>` or a principal URI.
    #[arg(long = "as", value_name = "RECIPIENT")]
    pub recipient: String,
    /// Trust only this issuer key: `KID=BASE64` (repeatable; default: the repository's bundle keys).
    #[arg(long, value_name = "KID=KEY")]
    pub trust: Vec<String>,
}

#[derive(Debug, Args)]
pub struct OpenArgs {
    #[command(flatten)]
    pub who: ConsumerArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// Bundle id (`urn:cl:bundle:…`) or envelope file.
    pub bundle: String,
    /// Why (recorded in the receipt).
    #[arg(long, default_value = "revoked by the issuer")]
    pub reason: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// The granted capability this command exercises (e.g. email.create_draft).
    #[arg(long)]
    pub action: String,
    /// The command and its arguments (after `--`); it receives the context as JSON on stdin.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// The requester: an agent name or `role:<name>`.
    #[arg(long = "as", value_name = "REQUESTER")]
    pub requester: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct KeysArgs {
    /// Key id in your key folder (see `ctx keys generate`).
    pub id: String,
    /// What the key will sign: `bundle` or `anchor`.
    #[arg(long, value_parser = ["bundle", "anchor"])]
    pub purpose: String,
}
