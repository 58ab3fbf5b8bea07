//! `ctx resolve` and `ctx bundle`: the context one consumer may see for one task.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use ctx_core::bundle::{explain, render};
use ctx_core::error::{Error, Exit, Result};
use ctx_core::resolve::{self, ResolveOptions};
use ctx_core::view::Who;

use super::sign::Product;
use super::{Global, Printer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BundleFormat {
    Json,
    Yaml,
    Markdown,
}

#[derive(Debug, Args, Clone)]
pub struct ResolveArgs {
    /// Resolve for this agent (through the roles it holds).
    #[arg(long, conflicts_with = "role")]
    pub agent: Option<String>,
    /// Resolve for these roles (repeatable; the lowest classification ceiling applies).
    #[arg(long = "role", num_args = 1..)]
    pub role: Vec<String>,
    /// What the context is for; drives relevance ranking.
    #[arg(long)]
    pub task: Option<String>,
    /// Resolve as of an RFC 3339 instant, or a date (the end of that day). Default: now.
    #[arg(long)]
    pub at: Option<String>,
    /// Explain why each object was included, excluded or outranked.
    #[arg(long)]
    pub explain: bool,
    /// Include superseded and expired context.
    #[arg(long)]
    pub include_historical: bool,
    /// Keep the N most relevant objects; the rest are reported as excluded.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Drop objects whose relevance score is below this (needs --task).
    #[arg(long, value_name = "SCORE")]
    pub min_relevance: Option<f64>,
    /// Narrow the scope to these id patterns (never widens it).
    #[arg(long = "include", value_name = "PATTERN", num_args = 1..)]
    pub include: Vec<String>,
    /// Output format (default: json; with --explain: a text explanation).
    #[arg(long, value_enum)]
    pub format: Option<BundleFormat>,
    /// Write to this file (atomically) instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Permit --output inside the repository when the bundle holds decrypted private
    /// content (the file is then kept out of git; a tracked file is still refused).
    #[arg(long)]
    pub allow_private_output: bool,
    #[command(flatten)]
    pub sign: super::sign::SignArgs,
    /// age identity for private collections (repeatable; default: $CTX_AGE_IDENTITY,
    /// then ~/.config/ctx/age/identity.txt).
    #[arg(long = "identity", value_name = "FILE")]
    pub identity: Vec<PathBuf>,
}

/// Parse `--at` or take the current time.
pub fn at_flag(at: Option<&str>) -> Result<ctx_core::time::Instant> {
    match at {
        Some(s) => ctx_core::time::parse_at(s).ok_or_else(|| {
            Error::Usage(format!("--at `{s}` is not an RFC 3339 instant (2026-08-09T12:00:00Z) or a date (2026-08-09)"))
        }),
        None => Ok(chrono::Utc::now().with_nanosecond_zero()),
    }
}

/// The library's plain resolve options from the flags.
pub fn options(g: &Global, a: &ResolveArgs) -> Result<ResolveOptions> {
    Ok(ResolveOptions {
        who: Who {
            agent: a.agent.clone(),
            roles: a.role.clone(),
        },
        task: a.task.clone(),
        at: at_flag(a.at.as_deref())?,
        include_historical: a.include_historical,
        limit: a.limit,
        min_relevance: a.min_relevance,
        include: a.include.clone(),
        offline: g.offline,
        identities: a.identity.clone(),
    })
}

/// `generated_at`: now, or SOURCE_DATE_EPOCH for reproducible builds.
pub fn generated_at() -> String {
    let now = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .unwrap_or_else(chrono::Utc::now);
    ctx_core::time::format(&now.with_nanosecond_zero())
}

trait NanoZero {
    fn with_nanosecond_zero(self) -> Self;
}

impl NanoZero for chrono::DateTime<chrono::Utc> {
    fn with_nanosecond_zero(self) -> Self {
        use chrono::Timelike;
        self.with_nanosecond(0).unwrap_or(self)
    }
}

pub fn run(g: &Global, p: &Printer, a: &ResolveArgs, always_bundle: bool) -> Result<Exit> {
    let started_at = super::sign::now();
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let (resolution, bundle) = resolve::bundle(&repo, &options(g, a)?, &generated_at())?;
    let out = super::printer::output_file(a.output.as_deref());
    // Decrypted private content stays out of the work tree unless explicitly allowed.
    if let (Some(o), true) = (out, resolution.holds_private()) {
        ctx_core::view::output::check_private_output(
            &repo.manifest,
            &g.cwd.join(o),
            a.allow_private_output,
            true,
        )?;
    }
    let data;
    let product = match (a.explain && !always_bundle, a.format) {
        (true, None) => Product::Text(explain::text(&repo, &resolution, &bundle)),
        (true, Some(BundleFormat::Json)) => {
            data = explain::data(&repo, &resolution, &bundle);
            Product::Json(&data)
        }
        (true, Some(BundleFormat::Yaml)) => {
            Product::Text(render::yaml(&explain::data(&repo, &resolution, &bundle)))
        }
        (_, Some(BundleFormat::Markdown)) => Product::Text(render::markdown(&bundle)),
        (false, Some(BundleFormat::Yaml)) => Product::Text(render::yaml(&bundle)),
        (false, Some(BundleFormat::Json)) | (false, None) => Product::Json(&bundle),
    };
    // A receipt signs the exact bytes emitted, so render them when one is due;
    // otherwise JSON is streamed and never held twice.
    let product = match product {
        Product::Json(v) if super::sign::receipt_wanted(&repo, a) => Product::Text(render::json(v)),
        other => other,
    };
    // The product and its evidence (audit events, receipt) appear together or not at all.
    super::sign::emit(p, &repo, a, &bundle, &product, always_bundle, &started_at)?;
    if let Some(out) = out {
        let _ = p.err(&format!(
            "wrote {} ({})\n",
            out.display(),
            bundle["digest"].as_str().unwrap_or("")
        ));
    }
    Ok(Exit::Ok)
}
