//! `ctx verify`: check bundles, receipts and decision records with nothing
//! but the repository (`ctx_core::evidence::verify`).

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::evidence::verify::{self, VerifyOptions};
use ctx_core::manifest::Manifest;

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Bundle (JSON) or receipt files to verify.
    pub files: Vec<PathBuf>,
    /// Receipt folder (default: .ctx/receipts in the repository).
    #[arg(long, value_name = "DIR")]
    pub receipts: Option<PathBuf>,
    /// Folder of stored bundles, found by bundle_id (default: .ctx/bundles).
    #[arg(long, value_name = "DIR")]
    pub bundles: Option<PathBuf>,
    /// The bundle a receipt describes (instead of searching --bundles).
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<PathBuf>,
    /// Check that every decision record's cited bundle digest matches a bundle stored in DIR.
    #[arg(long, value_name = "DIR")]
    pub decisions: Option<PathBuf>,
    /// For bundles: only recompute the digest; do not require a signed receipt.
    #[arg(long)]
    pub digest_only: bool,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &VerifyArgs) -> Result<Exit> {
    if a.files.is_empty() && a.decisions.is_none() {
        return Err(Error::Usage(
            "give bundle or receipt files to verify, or --decisions DIR".into(),
        ));
    }
    let (m, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let opts = VerifyOptions {
        cwd: g.cwd.clone(),
        files: a.files.clone(),
        receipts: a.receipts.clone(),
        bundles: a.bundles.clone(),
        bundle: a.bundle.clone(),
        digest_only: a.digest_only,
    };
    let mut report = verify::verify_files(&m, &opts)?;
    if let Some(dir) = &a.decisions {
        let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
        report
            .results
            .extend(verify::verify_decisions(&repo, &g.cwd.join(dir)));
    }
    let text = if a.format == "json" {
        serde_json::to_string_pretty(&report.to_json()).expect("JSON") + "\n"
    } else {
        let mut s = String::new();
        for o in &report.results {
            let mark = if o.ok() { "✓" } else { "✗" };
            s.push_str(&format!("{mark} {} ({})\n", o.file, o.kind));
            for l in &o.details {
                s.push_str(&format!("  {l}\n"));
            }
            for p in &o.problems {
                s.push_str(&format!("  error: {p}\n"));
            }
        }
        for k in &report.malformed_keys {
            s.push_str(&format!(
                "warning: declared key `{}` is malformed: {k}\n",
                k.id
            ));
        }
        s.push_str(if report.ok() {
            "verified\n"
        } else {
            "verification FAILED\n"
        });
        s
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(if report.ok() { Exit::Ok } else { Exit::Invalid })
}
