//! `ctx mcp install`: print, or merge into the client's file, the configuration
//! that starts `ctx mcp` for this repository ([`crate::mcp::install`] builds and
//! merges it).

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Exit, Result};

use crate::cli::args::ConsumerArgs;
use crate::cli::{Global, Printer};
use crate::mcp::install::{self, Client, Merged};

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

pub(super) fn run(g: &Global, p: &Printer, a: &InstallArgs) -> Result<Exit> {
    install::check_name(&a.name)?;
    // Check the consumer against the manifest now, so the client never starts a server that refuses.
    let (who, _, _) = crate::mcp::identity(&super::config(g), &a.who.who())?;
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let root = manifest.root.clone();
    let flags = install::consumer_flags(&a.who.who(), &who);
    let exe = install::current_exe();
    let entry = install::entry(a.client, &exe, &root, &flags);
    if !a.write {
        let mut text =
            serde_json::to_string_pretty(&install::snippet(&a.name, &entry)).expect("JSON");
        text.push('\n');
        crate::cli::io_result(p.out(&text))?;
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
    crate::cli::io_result(p.out(&format!(
        "{verb} `{}` {} {} for {}\n",
        a.name,
        if how == Merged::Unchanged { "" } else { "in" },
        file.display(),
        a.client.as_str()
    )))?;
    Ok(Exit::Ok)
}
