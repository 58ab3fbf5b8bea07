//! `ctx resolve` and `ctx bundle`: the context one consumer may see for one task.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use ctx_core::bundle::{explain, render};
use ctx_core::disclose::{self, Ask, Findings, Private};
use ctx_core::error::{Exit, Result};

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

/// The disclosure asked for by the shared scope flags (a person at the command line:
/// findings refuse unless `allow_findings`).
pub fn scope_ask(g: &Global, s: &ResolveScopeArgs, allow_findings: bool) -> Ask {
    let mut ask = Ask::person(s.who.who(), g.clock.at(s.at));
    ask.task = s.task.clone();
    ask.include = s.include.clone();
    ask.offline = g.offline;
    ask.private = Private::Identities(s.identity.clone());
    if allow_findings {
        ask.findings = Findings::Allow;
    }
    ask
}

/// The disclosure the flags ask for.
pub fn ask(g: &Global, a: &ResolveArgs) -> Ask {
    let mut ask = scope_ask(g, &a.scope, a.allow_findings);
    ask.include_historical = a.include_historical;
    ask.limit = a.limit;
    ask.min_relevance = a.min_relevance;
    ask.max_tokens = a.max_tokens.map(|n| n as usize);
    ask
}

pub fn run(g: &Global, p: &Printer, a: &ResolveArgs, always_bundle: bool) -> Result<Exit> {
    let started_at = ctx_core::time::format(&g.clock.now());
    let ask = ask(g, a);
    // Content is kept only for objects this consumer may read.
    let load = g.load_options(ctx_core::load::DEFAULT_MAX_FILE_SIZE);
    let mut repo = disclose::open(g.dir.as_deref(), &g.cwd, &load, &ask)?;
    let mut disclosure = disclose::resolve(&repo, &ask)?;
    super::gate::note(p, &disclosure.let_through)?;
    let out = super::printer::output_file(a.output.as_deref());
    // Decrypted private content stays out of the work tree unless explicitly allowed.
    disclose::check_private_output(
        &repo,
        &disclosure,
        out.map(|o| g.cwd.join(o)).as_deref(),
        a.allow_private_output,
    )?;
    let bundle = disclosure.compile_releasing(&mut repo, &g.clock.stamp());
    let resolution = &disclosure.resolution;
    let xo = explain::ExplainOptions {
        show_out_of_scope: a.show_out_of_scope,
    };
    let data;
    let product = match (a.explain && !always_bundle, a.format) {
        (true, None) => Product::Text(explain::text(&repo, resolution, &bundle, &xo)),
        (true, Some(BundleFormat::Json)) => {
            data = explain::data(&repo, resolution, &bundle, &xo);
            Product::Json(&data)
        }
        (true, Some(BundleFormat::Yaml)) => Product::Text(render::yaml(&explain::data(
            &repo, resolution, &bundle, &xo,
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
    super::sign::emit(
        p,
        &repo,
        a,
        &disclosure,
        &bundle,
        &product,
        always_bundle,
        &started_at,
    )?;
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
    super::leave_to_exit((disclosure, bundle, repo));
    Ok(Exit::Ok)
}
