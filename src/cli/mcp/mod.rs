//! `ctx mcp`: serve the repository to AI agents over the Model Context
//! Protocol (stdio), and `ctx mcp install`: configure an MCP client to do so.
//!
//! - `vault.rs`: the flags of a personal vault's server, gathered into its options;
//! - `install.rs`: `ctx mcp install` (`install_who.rs`: the consumer its entry serves).

mod install;
mod install_who;
mod vault;

use clap::{Args, Subcommand};

use ctx_core::error::{Error, Exit, Result};

use super::args::ConsumerArgs;
use super::{Global, Printer};
use install::InstallArgs;
use vault::VaultArgs;

pub const LONG_ABOUT: &str = "\
Serve this repository to an AI agent over the Model Context Protocol (stdio).

The consumer is fixed at launch (--agent or --role, else `extensions: ctx.mcp: {agent: NAME}`
in the manifest); no tool argument can change or widen it. The agent sees exactly what
`ctx resolve` would give that consumer. Confidential (sensitive) and restricted (critical)
context leaves only after the user approves it through the client (MCP elicitation, in both
the handshake era and 2026-07-28); restricted also needs a typed confirmation.

Tools: context_status, context_list, context_get, context_context, context_set,
request_context, resolve, search. Resources: context://<collection>[/<id>]. Prompts: the
manifest's `ctx.prompts`, plus support-reply and add-command.

On a personal vault (`ctx init --template personal`) it serves seed 004's tools instead
(context_status, context_list, context_get, context_context, request_context, context_set;
resources context://CATEGORY, metadata only; prompts form-fill, letter-draft, tax-prep) to the
consumer named by --agent, which the vault must have registered, through a token of --scope and
--mode (default read) held in memory, with the vault's approvals and audit. stdin is the MCP transport, so the
profile password comes from --password-file (or a prompt when stdin is a terminal). The server
takes the vault for itself: it cannot run beside a `ctx serve` of the same vault.

stdout carries JSON-RPC only; notes go to stderr. The server exits when stdin closes.";

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: Option<McpAction>,
    /// Answer for this agent (or role); default: the manifest's `ctx.mcp` entry.
    #[command(flatten)]
    pub who: ConsumerArgs,
    #[command(flatten)]
    pub vault: VaultArgs,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Configure an MCP host to start `ctx mcp`: print the entry, show the change (--dry-run), or merge it (--write).
    Install(InstallArgs),
}

pub fn run(g: &Global, p: &Printer, a: &McpArgs) -> Result<Exit> {
    match &a.action {
        None => {
            let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
            if ctx_core::personal::is_personal(&manifest) {
                return crate::mcp::personal::serve(a.vault.options(manifest, &a.who)?);
            }
            if a.vault.given() {
                return Err(Error::Usage(format!(
                    "--password-file, --secret-key-file, --scope, --mode and --idle-timeout apply to a personal vault; {} is not one",
                    manifest.file
                )));
            }
            crate::mcp::serve(config(g), &a.who.who())
        }
        Some(McpAction::Install(i)) => install::run(g, p, i),
    }
}

/// The server's plain configuration from the global flags.
fn config(g: &Global) -> crate::mcp::Config {
    crate::mcp::Config {
        dir: g.dir.clone(),
        cwd: g.cwd.clone(),
        offline: g.offline,
    }
}
