//! `ctx validate`: schema, ids, references, supersession, roles, permissions,
//! provenance and secrets, as a report for people or machines.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use ctx_core::diag::Diagnostic;
use ctx_core::error::{Exit, Result};
use ctx_core::load::{self, LoadOptions, Repo};
use ctx_core::validate::{self as checks, ValidateOptions};

use super::findings::Verdict;
use super::{Global, Printer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Human,
    Json,
    Sarif,
    Github,
}

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
    #[arg(long)]
    pub at: Option<String>,
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

/// Load the repository the global flags point at.
pub fn load_repo(g: &Global, max_file_size: u64) -> Result<Repo> {
    let (manifest, diags) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    Ok(load::load(manifest, diags, &LoadOptions { max_file_size }))
}

/// Keep findings in the given paths (relative to the working directory).
fn restrict(
    findings: Vec<Diagnostic>,
    repo: &Repo,
    g: &Global,
    paths: &[PathBuf],
) -> Vec<Diagnostic> {
    if paths.is_empty() {
        return findings;
    }
    let wanted: Vec<String> = paths
        .iter()
        .map(|p| {
            let abs = if p.is_absolute() {
                p.clone()
            } else {
                g.cwd.join(p)
            };
            let abs = abs.canonicalize().unwrap_or(abs);
            ctx_core::fs::RelPath::strip(&repo.manifest.root, &abs)
                .map(String::from)
                .unwrap_or_default()
        })
        .collect();
    findings
        .into_iter()
        .filter(|d| {
            let file = d.file.as_deref().unwrap_or("");
            wanted
                .iter()
                .any(|w| w.is_empty() || file == w || file.starts_with(&format!("{w}/")))
        })
        .collect()
}

pub fn run(g: &Global, p: &Printer, args: &ValidateArgs) -> Result<Exit> {
    let at = super::resolve::at_flag(args.at.as_deref())?;
    let out = args.output.as_deref();
    if args.fix {
        fix(g, p)?;
    }
    let progress = super::progress::Progress::start("loading");
    // `_checkout` keeps a temporary checkout of the index alive while findings are rendered.
    let loaded = if args.staged {
        super::hook::load_staged(g, p, args.max_file_size)
    } else {
        load_repo(g, args.max_file_size).map(|r| (r, None))
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
    let findings = restrict(findings, &repo, g, &args.paths);
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
