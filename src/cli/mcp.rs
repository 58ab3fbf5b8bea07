//! `ctx mcp`: serve the repository to AI agents over the Model Context
//! Protocol (stdio), and `ctx mcp install`: configure an MCP client to do so.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use ctx_core::error::{Error, Exit, Result};

use super::args::ConsumerArgs;
use super::{Global, Printer};
use crate::mcp::install::{self, Client, Merged};

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

stdout carries JSON-RPC only; notes go to stderr. The server exits when stdin closes.";

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: Option<McpAction>,
    /// Answer for this agent (or role); default: the manifest's `ctx.mcp` entry.
    #[command(flatten)]
    pub who: ConsumerArgs,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Print (or with --write, merge into the client's file) the configuration that starts `ctx mcp`.
    Install(InstallArgs),
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Which MCP client to configure.
    #[arg(long, value_enum)]
    pub client: Client,
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Merge the entry into the client's configuration file (atomic; other entries are kept).
    #[arg(long)]
    pub write: bool,
    /// The configuration file to merge into (default: the client's usual location).
    #[arg(long, value_name = "FILE", requires = "write")]
    pub file: Option<PathBuf>,
    /// The server's name in the client's list.
    #[arg(long, default_value = "ctx")]
    pub name: String,
}

pub fn run(g: &Global, p: &Printer, a: &McpArgs) -> Result<Exit> {
    match &a.action {
        None => crate::mcp::serve(config(g), &a.who.who()),
        Some(McpAction::Install(i)) => install_cmd(g, p, i),
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

fn install_cmd(g: &Global, p: &Printer, a: &InstallArgs) -> Result<Exit> {
    if a.name.is_empty()
        || a.name.len() > 64
        || !a
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(Error::Usage(format!(
            "--name `{}`: use 1-64 letters, digits, `-` or `_`",
            a.name
        )));
    }
    // Check the consumer against the manifest now, so the client never starts a server that refuses.
    let (who, _, _) = crate::mcp::identity(&config(g), &a.who.who())?;
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let root = manifest.root.clone();
    let mut flags = Vec::new();
    // Name the consumer explicitly only when it was given on the command line.
    if a.who.agent.is_some() || !a.who.role.is_empty() {
        if let Some(agent) = &who.agent {
            flags.extend(["--agent".to_string(), agent.clone()]);
        }
        for r in &who.roles {
            flags.extend(["--role".to_string(), r.clone()]);
        }
    }
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "ctx".into());
    let entry = install::entry(a.client, &exe, &root, &flags);
    if !a.write {
        let mut text =
            serde_json::to_string_pretty(&install::snippet(&a.name, &entry)).expect("JSON");
        text.push('\n');
        super::io_result(p.out(&text))?;
        let file = a.client.default_file(&root)?;
        let _ = p.err(&format!(
            "add this to {} (or run again with --write to merge it there)\n",
            file.display()
        ));
        return Ok(Exit::Ok);
    }
    let file = match &a.file {
        Some(f) if f.is_absolute() => f.clone(),
        Some(f) => g.cwd.join(f),
        None => a.client.default_file(&root)?,
    };
    let how = install::write(&file, &a.name, &entry)?;
    let verb = match how {
        Merged::Added => "added",
        Merged::Replaced => "updated",
        Merged::Unchanged => "already present in",
    };
    super::io_result(p.out(&format!(
        "{verb} `{}` {} {} for {}\n",
        a.name,
        if how == Merged::Unchanged { "" } else { "in" },
        file.display(),
        a.client.as_str()
    )))?;
    Ok(Exit::Ok)
}
