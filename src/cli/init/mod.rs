//! `ctx init`: a new repository that passes `validate --strict`, with two roles
//! of different scope so the permission model is visible from the start.

mod personal;
mod report;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::init;

use super::{Global, Printer};
use report::{ask, display, render_step};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Folder to create the repository in (default: the current folder).
    pub dir: Option<PathBuf>,
    /// Namespace id (lowercase, dashes), default derived from the folder name.
    #[arg(long)]
    pub id: Option<String>,
    /// Human-readable name.
    #[arg(long)]
    pub name: Option<String>,
    /// Take every default without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Re-initialise an existing repository, replacing the template files.
    #[arg(long)]
    pub force: bool,
    /// Also make the folder a git work tree (`git init`, unless it is inside one) and
    /// keep ctx's per-machine state out of git with a `.gitignore`.
    #[arg(long)]
    pub git: bool,
    /// With --git: leave out the pre-commit hook (`ctx hook install`) that --git
    /// otherwise installs, so that no commit breaks the repository unnoticed.
    #[arg(long, requires = "git")]
    pub no_hook: bool,
    /// `default` (a team repository with two roles) or `personal` (an encrypted personal
    /// vault of seed 004's ten categories; see docs/personal.md).
    #[arg(long, default_value = "default", value_parser = ["default", "personal"])]
    pub template: String,
    #[command(flatten)]
    pub password: crate::cli::personal::PasswordArgs,
    /// With --template personal: also encrypt every category to this age public key of
    /// your own (recovery when the secret key is lost). Repeatable.
    #[arg(long = "recovery-recipient", value_name = "AGE1...")]
    pub recovery: Vec<String>,
    /// Also write a CI workflow that checks the repository with a released ctx binary.
    #[arg(long, value_enum, value_name = "SYSTEM")]
    pub ci: Option<CiSystem>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CiSystem {
    /// GitHub Actions: .github/workflows/context.yml using ctx's action.yml.
    Github,
}

pub fn run(g: &Global, p: &Printer, args: &InitArgs) -> Result<Exit> {
    let dir = match &args.dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => g.cwd.join(d),
        None => g.cwd.clone(),
    };
    // An existing repository is never re-initialised by accident; `--ci`/`--git`
    // alone add their files to it and leave the repository as it is.
    let existing = init::existing_manifest(&dir).filter(|_| !args.force);
    if let Some(m) = existing {
        // A personal vault has its own, stricter rule (a new or empty folder only).
        if args.ci.is_none() && !args.git && args.template != "personal" {
            return Err(Error::Invalid(format!(
                "{} already holds an OpenContext repository ({m}); nothing was changed. \
                 `ctx init --force` re-initialises it, replacing the template files",
                display(&dir, &g.cwd)
            )));
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, &e))?;
    let folder_name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "context".into());
    let interactive = !args.yes && std::io::stdin().is_terminal();
    let default_id = args.id.clone().unwrap_or_else(|| init::slug(&folder_name));
    let id = if interactive && args.id.is_none() {
        ask("Namespace id", &default_id).map_err(|e| Error::io("stdin", &e))?
    } else {
        default_id
    };
    if !init::valid_namespace(&id) {
        return Err(Error::Usage(format!("`{id}` is not a valid namespace id: use lowercase letters, digits and dashes, e.g. `acme`")));
    }
    let default_name = args.name.clone().unwrap_or_else(|| folder_name.clone());
    let name = if interactive && args.name.is_none() {
        ask("Name", &default_name).map_err(|e| Error::io("stdin", &e))?
    } else {
        default_name
    };
    let today = g.clock.now().format("%Y-%m-%d").to_string();
    let name_yaml = serde_json::to_string(&name).expect("string");
    if args.template == "personal" {
        return personal::run(g, p, args, &dir, &id, &name_yaml);
    }
    let steps = init::apply(&init::Options {
        dir: &dir,
        id: &id,
        name_yaml: &name_yaml,
        today: &today,
        template: existing.is_none(),
        force: args.force,
        github_ci: args.ci.map(|CiSystem::Github| env!("CARGO_PKG_VERSION")),
        git: args.git,
    })?;
    let mut report = String::new();
    if let Some(m) = existing {
        report.push_str(&format!(
            "  kept     {m} (an existing repository; --force re-initialises it)\n"
        ));
    }
    for step in &steps {
        report.push_str(&render_step(step, &g.cwd));
    }
    report.push_str(&sign_starter_objects(g, &dir, &steps)?);
    if args.git && !args.no_hook {
        report.push_str(&install_hook(&dir, &g.cwd)?);
    }
    let shown = display(&dir, &g.cwd);
    report.push_str(&format!(
        "Initialised OpenContext repository `{id}` in {shown}\nNext: ctx -C {shown} validate --strict\n      ctx -C {shown} resolve --role support --task \"refund\" --explain\n"
    ));
    super::io_result(p.out(&report))?;
    Ok(Exit::Ok)
}

/// `--git`: the pre-commit hook, as `ctx hook install` writes it. A hook of the
/// user's own is kept (never replaced by init), and the report says how to add ours.
fn install_hook(dir: &Path, cwd: &Path) -> Result<String> {
    use ctx_core::git::hook::{self, InstallOptions};
    let Some(git) = ctx_core::git::Git::discover(dir) else {
        return Ok(String::new());
    };
    let path = hook::path(&git)?;
    if path.exists() && !hook::is_ours(&path) {
        return Ok(format!(
            "  kept     {} (your own hook; `ctx hook install --force` replaces it, or call `ctx validate --staged` from it)\n",
            display(&path, cwd)
        ));
    }
    let exe = std::env::current_exe().ok();
    let done = hook::install(
        &git,
        &InstallOptions {
            force: false,
            strict: false,
            exe: exe.as_deref(),
        },
    )?;
    let verb = if done.updated { "updated " } else { "created " };
    Ok(format!(
        "  {verb}  {} (pre-commit hook: `ctx validate --staged` before each commit; --no-hook leaves it out)\n",
        display(&done.path, cwd)
    ))
}

/// Sign off the canonical starter objects init just wrote: the person creating the
/// repository owns them, and a new repository passes `validate --strict` as created
/// (and keeps sign-offs from the start: see `ctx promote`).
fn sign_starter_objects(g: &Global, dir: &Path, steps: &[init::Step]) -> Result<String> {
    let written: Vec<&str> = steps
        .iter()
        .filter_map(|s| match s {
            init::Step::Template {
                rel,
                outcome: init::Outcome::Created | init::Outcome::Replaced,
            } => Some(*rel),
            _ => None,
        })
        .collect();
    if written.is_empty() {
        return Ok(String::new());
    }
    let repo = ctx_core::load::open(Some(dir), &g.cwd, &ctx_core::load::LoadOptions::default())?;
    let by = ctx_core::write::signoff::signer(None, &[]);
    let planned =
        ctx_core::write::promote::missing(&repo, Some(&written), &by, &g.clock.stamp(), "init")?;
    ctx_core::write::signoff::write_all(&repo.manifest.root, &planned)?;
    Ok(match planned.len() {
        0 => String::new(),
        n => format!(
            "  created   {}/ (sign-offs of the {n} canonical starter objects; commit them)\n",
            ctx_core::write::signoff::DIR
        ),
    })
}
