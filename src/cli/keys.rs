//! `ctx keys generate|list`: per-user Ed25519 signing keys and the
//! manifest's list of trusted public keys (`extensions: ctx.keys`).

use clap::{Args, Subcommand};
use serde_json::json;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::keys;
use ctx_core::keys::manage::{self, Declaration};
use ctx_core::manifest::Manifest;

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    pub command: KeysCommand,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an Ed25519 signing key in your config folder (never in a repository).
    Generate(GenerateArgs),
    /// Show the keys the manifest trusts and which private keys are present here.
    List(ListArgs),
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Key name, e.g. release-bot (a-z, 0-9, '.', '_', '-').
    #[arg(long)]
    pub id: String,
    /// Also trust the key in this repository's manifest (extensions: ctx.keys).
    #[arg(long)]
    pub declare: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &KeysArgs) -> Result<Exit> {
    match &a.command {
        KeysCommand::Generate(x) => generate(g, p, x),
        KeysCommand::List(x) => list(g, p, x),
    }
}

fn manifest(g: &Global) -> Result<Option<Manifest>> {
    match Manifest::discover(g.dir.as_deref(), &g.cwd) {
        Ok((m, _)) => Ok(Some(m)),
        Err(Error::ManifestNotFound { .. }) if g.dir.is_none() => Ok(None),
        Err(e) => Err(e),
    }
}

fn generate(g: &Global, p: &Printer, a: &GenerateArgs) -> Result<Exit> {
    keys::check_id(&a.id)?;
    let m = manifest(g)?;
    if a.declare && m.is_none() {
        return Err(Error::ManifestNotFound {
            searched: g.cwd.clone(),
        });
    }
    let k = manage::generate(&a.id, a.declare, m.as_ref())?;
    let _ = p.err(&format!(
        "wrote private key {} (mode 0600; keep it secret, never commit it)\n",
        k.path.display()
    ));
    let file = m.as_ref().map_or("", |m| m.file.as_str());
    let _ = p.err(&match k.declaration {
        Declaration::Added => format!(
            "declared `{}` in {file} under extensions.{}\n",
            k.id,
            keys::EXTENSION
        ),
        Declaration::AlreadyDeclared => format!("`{}` is already declared in {file}\n", k.id),
        Declaration::NotRequested => format!(
            "to trust it in a repository, add under `extensions:` of the manifest:\n  {}:\n    {}:\n      ed25519: \"{}\"\n(or run again with --declare next time)\n",
            keys::EXTENSION,
            k.id,
            k.public.to_base64()
        ),
    });
    super::io_result(p.out(&format!("{}\n", k.public.to_base64())))?;
    Ok(Exit::Ok)
}

fn list(g: &Global, p: &Printer, a: &ListArgs) -> Result<Exit> {
    let m = manifest(g)?;
    let inv = manage::inventory(m.as_ref())?;
    let errors: Vec<String> = inv.malformed.iter().map(ToString::to_string).collect();
    let out = if a.format == "json" {
        let rows: Vec<_> = inv
            .keys
            .iter()
            .map(|r| {
                json!({
                    "id": r.id,
                    "declared": r.public.is_some(),
                    "public_key": r.public.map(|k| k.to_base64()),
                    "fingerprint": r.public.map(|k| k.fingerprint()),
                    "private_key": r.private_key,
                    "private_key_path": r.private_key_path.as_ref().map(|p| p.display().to_string()),
                })
            })
            .collect();
        let doc = json!({
            "manifest": m.as_ref().map(|m| m.path.display().to_string()),
            "key_dir": inv.key_dir.display().to_string(),
            "keys": rows,
            "errors": errors,
        });
        serde_json::to_string_pretty(&doc).expect("JSON") + "\n"
    } else {
        let mut s = String::new();
        if inv.keys.is_empty() {
            s.push_str("no keys: run `ctx keys generate --id <name> --declare`\n");
        }
        for r in &inv.keys {
            let declared = if r.public.is_some() {
                "declared"
            } else {
                "not declared"
            };
            let fingerprint = r.public.map(|k| k.fingerprint()).unwrap_or_default();
            s.push_str(&format!(
                "{:<20} {declared:<12} private key: {:<10} {fingerprint}\n",
                r.id, r.private_key
            ));
        }
        for e in &errors {
            s.push_str(&format!("error: {e}\n"));
        }
        s
    };
    super::io_result(p.product(&out, a.output.as_deref()))?;
    Ok(if errors.is_empty() {
        Exit::Ok
    } else {
        Exit::Invalid
    })
}
