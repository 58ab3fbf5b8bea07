//! The `--sign` flags of `ctx resolve` / `ctx bundle`, and the emission of
//! a bundle with its evidence (`ctx_core::evidence::bundle`): evidence is
//! prepared before the product exists, the product is staged, then the
//! receipt and audit events are committed and the product appears.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use ctx_core::disclose::{deliver, Delivery, Disclosure, Sink};
use ctx_core::error::Result;
use ctx_core::evidence::bundle::SignOptions;
use ctx_core::evidence::BundleEvent;
use ctx_core::load::Repo;

use super::resolve::{BundleFormat, ResolveArgs};
use super::Printer;

#[derive(Debug, Args, Clone, Default)]
pub struct SignArgs {
    /// Also write a signed receipt for the bundle (.ctx/receipts/<bundle_id>.json);
    /// if it cannot be written, no bundle is emitted.
    #[arg(long)]
    pub sign: bool,
    /// Key to sign with (default: the only declared key present here).
    #[arg(long, value_name = "ID", requires = "sign")]
    pub key: Option<String>,
    /// Write the receipt to this new file instead of the repository's receipt folder.
    #[arg(long, value_name = "FILE", requires = "sign")]
    pub receipt: Option<PathBuf>,
    /// Record the receipt as a correction of this earlier receipt id.
    #[arg(long, value_name = "RECEIPT_ID", requires = "sign")]
    pub supersedes: Option<String>,
}

impl SignArgs {
    fn options(&self) -> SignOptions {
        SignOptions {
            sign: self.sign,
            key: self.key.clone(),
            receipt_file: self.receipt.clone(),
            supersedes: self.supersedes.clone(),
        }
    }
}

/// What a resolve run emits: rendered text, or a JSON document streamed out.
pub enum Product<'a> {
    Text(String),
    Json(&'a Value),
}

/// Will this run write a receipt (`--sign`, or the manifest's policy)?
pub fn receipt_wanted(repo: &Repo, a: &ResolveArgs) -> bool {
    deliver::receipt_due(&repo.manifest, &a.sign.options())
}

/// Emit `product` to `--output` or stdout together with its evidence.
#[allow(clippy::too_many_arguments)]
pub fn emit(
    p: &Printer,
    repo: &Repo,
    a: &ResolveArgs,
    disclosure: &Disclosure,
    compiled: &Value,
    product: &Product<'_>,
    always_bundle: bool,
    started_at: &str,
) -> Result<()> {
    let format = match (a.explain && !always_bundle, a.format) {
        (true, None) => "explain",
        (true, Some(_)) => "explain-data",
        (false, Some(BundleFormat::Yaml)) => "yaml",
        (false, Some(BundleFormat::Markdown)) => "markdown",
        (false, _) => "json",
    };
    let delivery = Delivery {
        event: if always_bundle {
            BundleEvent::Bundle
        } else {
            BundleEvent::Resolve
        },
        format,
        started_at,
        sign: a.sign.options(),
    };
    let bytes = match product {
        Product::Text(t) => Some(t.as_bytes()),
        Product::Json(_) => None,
    };
    let sink = match a.output.as_deref().filter(|o| *o != Path::new("-")) {
        None => Sink::Stream(Box::new(|| {
            super::io_result(match product {
                Product::Text(t) => p.product(t, None),
                Product::Json(v) => p.product_json(v, None),
            })
        })),
        // Staged beside the destination; committed before the rename.
        Some(path) => Sink::File {
            path,
            fill: Box::new(|f| match product {
                Product::Text(t) => f.write_all(t.as_bytes()),
                Product::Json(v) => {
                    let mut buf = std::io::BufWriter::with_capacity(1 << 16, f);
                    serde_json::to_writer_pretty(&mut buf, v).map_err(std::io::Error::from)?;
                    buf.write_all(b"\n")?;
                    buf.flush()
                }
            }),
        },
    };
    let written = disclosure.deliver(&repo.manifest, compiled, &delivery, bytes, sink)?;
    if let Some(w) = written {
        let shown = w.path.strip_prefix(&repo.manifest.root).unwrap_or(&w.path);
        let mut note = format!(
            "signed receipt {} ({}, key {})",
            shown.display(),
            w.id,
            w.key_id
        );
        if let Some(prev) = &w.supersedes {
            note.push_str(&format!(", supersedes {prev}"));
        }
        let _ = p.err(&(note + "\n"));
    }
    Ok(())
}
