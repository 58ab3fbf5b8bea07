//! `ctx validate`: schema, ids, references, supersession, roles, permissions,
//! provenance and secrets, as a report for people or machines.

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Exit, Result};
use ctx_core::load::{self, Repo};
use ctx_core::time::Instant;
use ctx_core::validate::{self as checks, ValidateOptions};

use super::args::{parse_at, ReportFormat};
use super::findings::Verdict;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Fail on warnings too, and report unknown `ctx.` extensions and unapproved objects.
    #[arg(long)]
    pub strict: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: ReportFormat,
    /// Largest object file accepted, in bytes.
    #[arg(long, default_value_t = load::DEFAULT_MAX_FILE_SIZE, value_name = "BYTES")]
    pub max_file_size: u64,
    /// Check the staged state (what `git commit` would record) instead of the work tree.
    #[arg(long)]
    pub staged: bool,
    /// Judge the repository as of this RFC 3339 instant or date (default: now).
    #[arg(long, value_name = "WHEN", value_parser = parse_at)]
    pub at: Option<Instant>,
    /// Write the report to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// First apply the fixes that cannot change meaning (a date where a timestamp
    /// belongs becomes the start of that day, UTC; YAML 1.1 boolean words are quoted),
    /// listed on stderr; then validate.
    #[arg(long, conflicts_with = "staged")]
    pub fix: bool,
    /// Only report findings in these files or folders (the whole repository is still checked).
    pub paths: Vec<PathBuf>,
}

/// Load the repository the global flags point at (through the parse cache unless turned off).
pub fn load_repo(g: &Global, max_file_size: u64) -> Result<Repo> {
    load::open(g.dir.as_deref(), &g.cwd, &g.load_options(max_file_size))
}

/// [`load_repo`] for validate and doctor ([`Global::check_options`]).
pub fn load_repo_for_validation(g: &Global, max_file_size: u64) -> Result<Repo> {
    load::open(g.dir.as_deref(), &g.cwd, &g.check_options(max_file_size))
}

/// [`load_repo`] for commands that only check clocks and conflicts (stale, conflicts):
/// objects come without their content, which no check reads, so a large
/// repository loads in far less memory.
pub fn load_repo_for_checks(g: &Global, max_file_size: u64) -> Result<Repo> {
    let opts = ctx_core::load::LoadOptions {
        content: false,
        ..g.load_options(max_file_size)
    };
    load::open(g.dir.as_deref(), &g.cwd, &opts)
}

/// The repository's manifest when there is one: commands that also work outside a
/// repository (keys, provider) get None, unless `-C` named a folder.
pub fn optional_manifest(g: &Global) -> Result<Option<ctx_core::manifest::Manifest>> {
    match ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd) {
        Ok((m, _)) => Ok(Some(m)),
        Err(ctx_core::error::Error::ManifestNotFound { .. }) if g.dir.is_none() => Ok(None),
        Err(e) => Err(e),
    }
}

pub fn run(g: &Global, p: &Printer, args: &ValidateArgs) -> Result<Exit> {
    let at = g.clock.at(args.at);
    let out = args.output.as_deref();
    if args.fix {
        fix(g, p)?;
    }
    let progress = super::progress::Progress::start("loading");
    // `_checkout` keeps a temporary checkout of the index alive while findings are rendered.
    let loaded = if args.staged {
        let opts = g.check_options(args.max_file_size);
        ctx_core::git::staged::load_staged(g.dir.as_deref(), &g.cwd, &opts).map(|s| {
            for n in &s.notes {
                let _ = p.err(&format!("note: {n}\n"));
            }
            (s.repo, s.checkout)
        })
    } else {
        load_repo_for_validation(g, args.max_file_size).map(|r| (r, None))
    };
    let (repo, _checkout) = match loaded {
        Ok(x) => x,
        Err(e) => {
            progress.finish();
            return super::findings::unloadable(p, e, args.format, out);
        }
    };
    let findings = checks::validate(
        &repo,
        ValidateOptions {
            strict: args.strict,
            at: Some(at),
        },
    );
    let findings = checks::restrict(findings, &repo.manifest.root, &g.cwd, &args.paths);
    progress.finish();
    let failed = checks::failed(&findings, args.strict);
    super::findings::emit(
        p,
        &repo,
        &findings,
        args.format,
        failed,
        Verdict::Validity,
        out,
    )?;
    // Not `_checkout`: its Drop removes a temporary checkout.
    super::leave_to_exit((repo, findings));
    Ok(if failed { Exit::Invalid } else { Exit::Ok })
}

/// `--fix`: repair, then say what was repaired (stderr; the report stays on stdout).
/// An unloadable manifest is left to the report that follows.
fn fix(g: &Global, p: &Printer) -> Result<()> {
    let Ok((manifest, _)) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd) else {
        return Ok(());
    };
    let fixed = ctx_core::lint::fix::run(&manifest, false)?;
    let mut text = String::new();
    for f in &fixed {
        let what: Vec<String> = f.changes.iter().map(ToString::to_string).collect();
        text.push_str(&format!("fixed {} ({})\n", f.file, what.join("; ")));
    }
    super::io_result(p.err(&text))
}
