//! `ctx mcp install`: print the entry that starts `ctx mcp` for this repository in
//! an MCP host, show what merging it would change (`--dry-run`), or merge it
//! (`--write`). [`crate::mcp::install`] builds and merges it; `install_who.rs`
//! decides the consumer flags it carries.

use std::path::{Path, PathBuf};

use clap::Args;

use ctx_core::error::{Error, Exit, Result};

use super::install_who::{self, VaultEntryArgs};
use crate::cli::args::ConsumerArgs;
use crate::cli::{Global, Printer};
use crate::mcp::install::{self, Env, Host, Os, Outcome, Scope};

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The MCP host to configure.
    #[arg(long, value_enum, alias = "client")]
    pub host: Host,
    /// The host's project file (shared through the repository) or user file (this machine).
    /// Default: project where the host has one; user on a personal vault.
    #[arg(long, value_enum)]
    pub scope: Option<Scope>,
    #[command(flatten)]
    pub who: ConsumerArgs,
    #[command(flatten)]
    pub vault: VaultEntryArgs,
    /// Merge the entry into the host's file (atomic; every other byte is kept).
    #[arg(long, conflicts_with = "dry_run")]
    pub write: bool,
    /// Show what --write would change, as a unified diff; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace an existing entry of the same name that differs from this one.
    #[arg(long)]
    pub force: bool,
    /// The file to merge into (default: the host's file for the scope).
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The server's name in the host's list (default: `ctx-<manifest id>`).
    #[arg(long)]
    pub name: Option<String>,
}

pub(super) fn run(g: &Global, p: &Printer, a: &InstallArgs) -> Result<Exit> {
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let vault = ctx_core::personal::is_personal(&manifest);
    let scope = match (a.scope, vault) {
        (Some(Scope::Project), true) => {
            return Err(Error::Usage(
                "a personal vault's entry names your password file: use --scope user, never a file shared through the repository".into(),
            ))
        }
        (Some(s), _) => s,
        (None, true) => Scope::User,
        (None, false) => a.host.default_scope(),
    };
    let name = match &a.name {
        Some(n) => {
            install::check_name(n)?;
            n.clone()
        }
        None => install::default_name(&manifest.id)?,
    };
    // Check the consumer now, so the host never starts a server that refuses.
    let flags = if vault {
        install_who::vault_flags(g, &manifest, &a.who, &a.vault)?
    } else {
        install_who::repository_flags(g, &a.who, &a.vault)?
    };
    let root = manifest.root.clone();
    let os = Os::current();
    let env = Env::from_process(os);
    let launch = install::launch(a.host, scope, &install::current_exe(), &root, &flags)?;
    let file = match &a.file {
        Some(f) => g.cwd.join(f),
        None => a.host.file(scope, &root, os, &env)?,
    };
    let shown = display_name(&file, &root, env.home.as_deref());
    if !a.write && !a.dry_run {
        crate::cli::io_result(p.out(&install::snippet(a.host, &name, &launch)))?;
        let _ = p.err(&format!(
            "add this to {shown} ({} reads it); --dry-run shows the change, --write makes it\n",
            a.host.as_str()
        ));
        return Ok(Exit::Ok);
    }
    let plan = install::plan(a.host, &file, &name, &launch)?;
    let shown = display_name(&plan.file, &root, env.home.as_deref());
    if a.dry_run && plan.outcome != Outcome::Unchanged {
        crate::cli::io_result(p.out(&install::diff(&plan, &shown)))?;
    }
    match plan.outcome {
        Outcome::Unchanged => {
            crate::cli::io_result(p.out(&format!(
                "`{name}` is already in {shown} for {}: nothing to change\n",
                a.host.as_str()
            )))?;
            return Ok(Exit::Ok);
        }
        Outcome::Replaces if !a.force => {
            return Err(Error::InvalidHint {
                message: format!(
                    "{shown} already has a different `{name}` entry; nothing was written"
                ),
                help: "run again with --force to replace it (--dry-run shows the change), or pick another --name".into(),
            })
        }
        _ => {}
    }
    let verb = match (plan.outcome, a.dry_run) {
        (Outcome::Added, true) => "would add",
        (_, true) => "would replace (--force)",
        (Outcome::Added, false) => "added",
        (_, false) => "replaced (--force)",
    };
    if a.dry_run {
        let _ = p.err(&format!(
            "{verb} `{name}` in {shown} for {}; run with --write to make the change\n",
            a.host.as_str()
        ));
        return Ok(Exit::Ok);
    }
    install::apply(&plan)?;
    crate::cli::io_result(p.out(&format!(
        "{verb} `{name}` in {shown} for {}\n",
        a.host.as_str()
    )))?;
    Ok(Exit::Ok)
}

/// How a file is named in messages and diff headers: relative inside the
/// repository, `~/…` inside the home folder, else in full.
fn display_name(file: &Path, root: &Path, home: Option<&Path>) -> String {
    if let Ok(rel) = file.strip_prefix(root) {
        return rel.display().to_string();
    }
    if let Some(rel) = home.and_then(|h| file.strip_prefix(h).ok()) {
        return format!("~{}{}", std::path::MAIN_SEPARATOR, rel.display());
    }
    file.display().to_string()
}
