//! `ctx hook install|uninstall`: a git pre-commit hook that validates the staged
//! state (the hook itself is `ctx_core::git::hook`).

use clap::{Args, Subcommand};

use ctx_core::error::{Error, Exit, Result};
use ctx_core::git::hook::{self, InstallOptions, Uninstalled};
use ctx_core::git::{staged, Git};
use ctx_core::manifest::Manifest;

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub action: HookAction,
}

#[derive(Debug, Subcommand)]
pub enum HookAction {
    /// Write a pre-commit hook that runs `ctx validate --staged`.
    Install {
        /// Replace a hook ctx did not write (the old one is kept as pre-commit.bak).
        #[arg(long)]
        force: bool,
        /// Make the hook run `validate --strict` (fail on warnings too).
        #[arg(long)]
        strict: bool,
    },
    /// Remove the pre-commit hook, if ctx wrote it.
    Uninstall,
}

fn git_for(g: &Global) -> Result<(Manifest, Git)> {
    let (manifest, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let git = Git::discover(&manifest.root).ok_or_else(|| {
        Error::Usage(format!(
            "{} is not inside a git work tree (or git is not installed); run `git init` first",
            manifest.root.display()
        ))
    })?;
    Ok((manifest, git))
}

pub fn run(g: &Global, p: &Printer, a: &HookArgs) -> Result<Exit> {
    let (manifest, git) = git_for(g)?;
    match &a.action {
        HookAction::Install { force, strict } => {
            let exe = std::env::current_exe().ok();
            let (force, strict, exe) = (*force, *strict, exe.as_deref());
            let done = hook::install(&git, &InstallOptions { force, strict, exe })?;
            // Parse the staged state once now, so the first commit finds a warm parse cache.
            let opts = g.check_options(ctx_core::load::DEFAULT_MAX_FILE_SIZE);
            let _ = staged::load_staged(g.dir.as_deref(), &g.cwd, &opts);
            let verb = if done.updated { "updated" } else { "installed" };
            let note = done.backup.as_ref().map_or(String::new(), |b| {
                format!(" (the previous hook is now {})", b.display())
            });
            super::io_result(p.out(&format!(
                "{verb} {}{note}\nit runs `ctx -C {} validate --staged{}` before each commit of {}\n",
                done.path.display(),
                done.dir,
                if strict { " --strict" } else { "" },
                manifest.id
            )))?;
        }
        HookAction::Uninstall => match hook::uninstall(&git)? {
            Uninstalled::NotInstalled => {
                super::io_result(p.out("no pre-commit hook is installed\n"))?
            }
            Uninstalled::Removed(path) => {
                super::io_result(p.out(&format!("removed {}\n", path.display())))?
            }
        },
    }
    Ok(Exit::Ok)
}
