//! `ctx resolve` and `ctx bundle`: the context one consumer may see for one task.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use ctx_core::bundle::{explain, render};
use ctx_core::error::{Exit, Result};
use ctx_core::resolve::{self, ResolveOptions};

use super::args::ResolveScopeArgs;
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
    #[command(flatten)]
    pub scope: ResolveScopeArgs,
    /// Explain why each object was included, excluded or outranked.
    #[arg(long)]
    pub explain: bool,
    /// With --explain: list the objects outside the consumer's scope (ids only)
    /// instead of counting them. For repository owners.
    #[arg(long, requires = "explain")]
    pub show_out_of_scope: bool,
    /// Include superseded and expired context.
    #[arg(long)]
    pub include_historical: bool,
    /// Keep the N most relevant objects; the rest are reported as excluded.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Drop objects whose relevance score is below this (needs --task).
    #[arg(long, value_name = "SCORE")]
    pub min_relevance: Option<f64>,
    /// Keep the most relevant objects that fit about N tokens (ceil(characters / 4) per
    /// object's content, title and summary, plus a fixed allowance); the rest are
    /// reported as excluded (not-relevant, "trimmed by max_tokens").
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
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
    /// Hand the context out even when error-level findings (a detected secret, an
    /// invalid object) concern objects it contains; they are listed on stderr.
    #[arg(long)]
    pub allow_findings: bool,
    #[command(flatten)]
    pub sign: super::sign::SignArgs,
}

/// The library's plain resolve options from the shared scope flags.
pub fn scope_options(g: &Global, s: &ResolveScopeArgs) -> ResolveOptions {
    let mut o = ResolveOptions::new(s.who.who(), g.clock.at(s.at));
    o.task = s.task.clone();
    o.include = s.include.clone();
    o.offline = g.offline;
    o.identities = s.identity.clone();
    o
}

/// The library's plain resolve options from the flags.
pub fn options(g: &Global, a: &ResolveArgs) -> ResolveOptions {
    let mut o = scope_options(g, &a.scope);
    o.include_historical = a.include_historical;
    o.limit = a.limit;
    o.min_relevance = a.min_relevance;
    o.max_tokens = a.max_tokens.map(|n| n as usize);
    o
}

pub fn run(g: &Global, p: &Printer, a: &ResolveArgs, always_bundle: bool) -> Result<Exit> {
    let started_at = ctx_core::time::format(&g.clock.now());
    let opts = options(g, a);
    // Content is kept only for objects this consumer may read.
    let load = g.load_options(ctx_core::load::DEFAULT_MAX_FILE_SIZE);
    let mut repo = resolve::open(g.dir.as_deref(), &g.cwd, &load, &opts)?;
    let (resolution, bundle) =
        resolve::bundle_releasing_content(&mut repo, &opts, &g.clock.stamp())?;
    super::gate::check(p, &repo, &resolution, a.allow_findings)?;
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
    let xo = explain::ExplainOptions {
        show_out_of_scope: a.show_out_of_scope,
    };
    let data;
    let product = match (a.explain && !always_bundle, a.format) {
        (true, None) => Product::Text(explain::text(&repo, &resolution, &bundle, &xo)),
        (true, Some(BundleFormat::Json)) => {
            data = explain::data(&repo, &resolution, &bundle, &xo);
            Product::Json(&data)
        }
        (true, Some(BundleFormat::Yaml)) => Product::Text(render::yaml(&explain::data(
            &repo,
            &resolution,
            &bundle,
            &xo,
        ))),
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
    if let Some(b) = &resolution.budget {
        let _ = p.err(&format!(
            "max-tokens {}: kept {} object(s), about {} tokens; trimmed {} (listed as excluded). Estimate: {}\n",
            b.max_tokens,
            b.kept,
            b.used_tokens,
            b.trimmed.len(),
            b.tokenizer
        ));
    }
    if let Some(out) = out {
        let _ = p.err(&format!(
            "wrote {} ({})\n",
            out.display(),
            bundle["digest"].as_str().unwrap_or("")
        ));
    }
    // All three are plain data (nothing zeroized: the HMAC key lives in the View).
    super::leave_to_exit((resolution, bundle, repo));
    Ok(Exit::Ok)
}
