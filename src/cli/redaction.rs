//! `ctx redaction-key`: create the repository's redaction key, the secret that keys
//! `mode: hash` redaction (HMAC-SHA256), so hashed values match in every clone.

use clap::Args;

use ctx_core::error::{Exit, Result};
use ctx_core::manifest::Manifest;
use ctx_core::view::output;

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct RedactionKeyArgs {}

pub fn run(g: &Global, p: &Printer, _a: &RedactionKeyArgs) -> Result<Exit> {
    let (m, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let path = output::create_hash_key(&m)?;
    let shown = path.strip_prefix(&m.root).unwrap_or(&path);
    super::io_result(p.out(&format!(
        "created {}\n  commit it, so every clone and CI hash redacted values alike;\n  \
         it guards bundles against their readers, who cannot read the repository\n",
        shown.display()
    )))?;
    Ok(Exit::Ok)
}
