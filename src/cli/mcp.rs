//! `ctx mcp`: serve the repository to AI agents over the Model Context
//! Protocol (stdio), and `ctx mcp install`: configure an MCP client to do so.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use ctx_core::error::{Error, Exit, Result};

use super::args::ConsumerArgs;
use super::personal::PasswordArgs;
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

On a personal vault (`ctx init --template personal`) it serves seed 004's tools instead
(context_status, context_list, context_get, context_context, request_context, context_set;
resources context://CATEGORY) to the consumer named by --agent, through a token of --scope and
--mode held in memory, with the vault's approvals and audit. stdin is the MCP transport, so the
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

/// Flags that apply to a personal vault only.
#[derive(Debug, Args)]
pub struct VaultArgs {
    #[command(flatten)]
    pub password: PasswordArgs,
    /// Personal vault: the secret key file (default: the one `ctx init` stored in your config folder).
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// Personal vault: the field id patterns the consumer's token covers, comma-separated
    /// (default `*`: what the vault's consumer role allows).
    #[arg(long, value_name = "PATTERNS")]
    pub scope: Option<String>,
    /// Personal vault: what the consumer's token may do.
    #[arg(long, value_name = "MODE", value_parser = ["read", "write", "read-write"])]
    pub mode: Option<String>,
    /// Personal vault: lock after this long without requests (default: the vault's, 30m).
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<String>,
}

impl VaultArgs {
    fn given(&self) -> bool {
        self.password.password_file.is_some()
            || self.secret_key_file.is_some()
            || self.scope.is_some()
            || self.mode.is_some()
            || self.idle_timeout.is_some()
    }
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
        None => {
            let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
            if ctx_core::personal::is_personal(&manifest) {
                return crate::mcp::personal::serve(personal(manifest, &a.who, &a.vault)?);
            }
            if a.vault.given() {
                return Err(Error::Usage(format!(
                    "--password-file, --secret-key-file, --scope, --mode and --idle-timeout apply to a personal vault; {} is not one",
                    manifest.file
                )));
            }
            crate::mcp::serve(config(g), &a.who.who())
        }
        Some(McpAction::Install(i)) => install_cmd(g, p, i),
    }
}

/// A personal vault's server options: who, what scope and mode, and the secrets
/// that unlock it (read here, never from the MCP transport).
fn personal(
    manifest: ctx_core::manifest::Manifest,
    who: &ConsumerArgs,
    v: &VaultArgs,
) -> Result<crate::mcp::personal::Options> {
    use std::io::IsTerminal;
    let consumer = crate::mcp::personal_consumer(&manifest, &who.who())?;
    let scope: Vec<String> = match &v.scope {
        None => vec!["*".to_string()],
        Some(s) => s
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect(),
    };
    if scope.is_empty() {
        return Err(Error::Usage(
            "--scope: give field id patterns such as `identity.*,addresses.current`".into(),
        ));
    }
    let mode = ctx_core::personal::tokens::Mode::parse(v.mode.as_deref().unwrap_or("read-write"))
        .ok_or_else(|| Error::Usage("--mode: read, write or read-write".into()))?;
    let idle_timeout = v
        .idle_timeout
        .as_deref()
        .map(|s| {
            ctx_core::time::parse_duration(s)
                .and_then(|d| d.to_std().ok())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "--idle-timeout: expected a duration such as 30m or 90s, found `{s}`"
                    ))
                })
        })
        .transpose()?;
    let cfg = ctx_core::personal::config::PersonalConfig::require(&manifest)?;
    let secret = super::personal::secret_key(&cfg, v.secret_key_file.as_deref())?;
    if v.password.password_file.is_none() && !std::io::stdin().is_terminal() {
        return Err(Error::Usage(
            "ctx mcp on a personal vault needs the profile password, and stdin carries the MCP transport: \
             give --password-file FILE (a file only you can read) in the client's configuration"
                .into(),
        ));
    }
    let password = v.password.read(false)?;
    Ok(crate::mcp::personal::Options {
        manifest,
        consumer,
        scope,
        mode,
        password,
        secret_key: secret.display(),
        idle_timeout,
    })
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
