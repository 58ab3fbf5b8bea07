//! `ctx keys generate|list`: per-user Ed25519 signing keys and the
//! manifest's list of trusted public keys (`extensions: ctx.keys`).

use clap::{Args, Subcommand};

use ctx_core::error::{Error, Exit, Result};
use ctx_core::keys;
use ctx_core::keys::manage::{self, Declaration};
use ctx_core::manifest::Manifest;

use super::args::TextFormat;
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
    /// Trust a key you already hold (made without --declare) in this repository's manifest.
    Declare(DeclareArgs),
}

#[derive(Debug, Args)]
pub struct DeclareArgs {
    /// The key's name (as given to `ctx keys generate --id`).
    pub id: String,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Key name, e.g. release-bot (a-z, 0-9, '.', '_', '-').
    #[arg(long)]
    pub id: String,
    /// Also trust the key in this repository's manifest (extensions: ctx.keys;
    /// `ctx keys declare ID` does it later).
    #[arg(long)]
    pub declare: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &KeysArgs) -> Result<Exit> {
    match &a.command {
        KeysCommand::Generate(x) => generate(g, p, x),
        KeysCommand::List(x) => list(g, p, x),
        KeysCommand::Declare(x) => declare(g, p, x),
    }
}

fn declare(g: &Global, p: &Printer, a: &DeclareArgs) -> Result<Exit> {
    let (m, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let (public, declaration) = manage::declare(&a.id, &m)?;
    let note = match declaration {
        Declaration::AlreadyDeclared => format!("`{}` is already declared in {}\n", a.id, m.file),
        _ => format!(
            "declared `{}` in {} under extensions.{}\n",
            a.id,
            m.file,
            keys::EXTENSION
        ),
    };
    let _ = p.err(&note);
    super::io_result(p.out(&format!("{}\n", public.to_base64())))?;
    Ok(Exit::Ok)
}

use super::validate::optional_manifest as manifest;

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
    let out = if a.format == TextFormat::Json {
        let doc = inv.to_json(m.as_ref().map(|m| m.path.as_path()));
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
