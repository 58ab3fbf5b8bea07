//! `ctx keys generate|list`: per-user Ed25519 signing keys and the
//! manifest's list of trusted public keys (`extensions: ctx.keys`).

use clap::{Args, Subcommand};
use serde_json::json;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::keys::{self, Declared};
use ctx_core::manifest::Manifest;
use ctx_core::signing::SigningKeyPair;

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
    let path = keys::key_path(&a.id)?;
    keys::guard_path(&path, m.as_ref().map(|m| m.root.as_path()))?;
    if path.exists() {
        return Err(Error::Invalid(format!(
            "{}: a key named `{}` already exists; keys are never overwritten\n  help: choose another --id, or move the old key away first",
            path.display(),
            a.id
        )));
    }
    let pair = SigningKeyPair::generate().map_err(|e| Error::Invalid(e.to_string()))?;
    let public = pair.public_key();
    // Prepare the manifest edit first, so a manifest ctx cannot edit stops
    // the command before a key is written.
    let edit = match (&m, a.declare) {
        (Some(m), true) => Some(keys::declare_text(
            &m.text,
            m.file.ends_with(".json"),
            &a.id,
            &public,
        )?),
        _ => None,
    };
    let dir = path.parent().expect("key path has a folder");
    create_private_dir(dir)?;
    pair.save(&path)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let _ = p.err(&format!(
        "wrote private key {} (mode 0600; keep it secret, never commit it)\n",
        path.display()
    ));
    match (edit, &m) {
        (Some(Declared::Changed(text)), Some(m)) => {
            keys::write_manifest(&m.path, &m.text, &text)?;
            let _ = p.err(&format!(
                "declared `{}` in {} under extensions.{}\n",
                a.id,
                m.file,
                keys::EXTENSION
            ));
        }
        (Some(Declared::AlreadyDeclared), Some(m)) => {
            let _ = p.err(&format!("`{}` is already declared in {}\n", a.id, m.file));
        }
        _ => {
            let _ = p.err(&format!(
                "to trust it in a repository, add under `extensions:` of the manifest:\n  {}:\n    {}:\n      ed25519: \"{}\"\n(or run again with --declare next time)\n",
                keys::EXTENSION,
                a.id,
                public.to_base64()
            ));
        }
    }
    super::io_result(p.out(&format!("{}\n", public.to_base64())))?;
    Ok(Exit::Ok)
}

/// Create the key folder with mode 0700 (and its parents as needed).
fn create_private_dir(dir: &std::path::Path) -> Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir).map_err(|e| Error::io(dir, &e))
}

fn list(g: &Global, p: &Printer, a: &ListArgs) -> Result<Exit> {
    let m = manifest(g)?;
    let local = keys::local_keys()?;
    let (declared, errors) = m.as_ref().map(keys::declared).unwrap_or_default();
    let mut ids: Vec<&String> = declared.keys().chain(local.keys()).collect();
    ids.sort();
    ids.dedup();
    let mut rows = Vec::new();
    for id in ids {
        let public = declared.get(id);
        let private = local.get(id);
        // A private key that cannot be read, or that is not the declared
        // key, is shown as such rather than silently treated as usable.
        let local_state = match private {
            None => "absent".to_string(),
            Some(path) => match SigningKeyPair::load(path) {
                Err(e) => format!("unusable ({e})"),
                Ok(k) if public.is_some_and(|p| *p != k.public_key()) => {
                    "MISMATCH (not the declared key)".into()
                }
                Ok(_) => "present".into(),
            },
        };
        rows.push(json!({
            "id": id,
            "declared": public.is_some(),
            "public_key": public.map(|k| k.to_base64()),
            "fingerprint": public.map(|k| k.fingerprint()),
            "private_key": local_state,
            "private_key_path": private.map(|p| p.display().to_string()),
        }));
    }
    let out = if a.format == "json" {
        let doc = json!({
            "manifest": m.as_ref().map(|m| m.path.display().to_string()),
            "key_dir": keys::key_dir()?.display().to_string(),
            "keys": rows,
            "errors": errors,
        });
        serde_json::to_string_pretty(&doc).expect("JSON") + "\n"
    } else {
        let mut s = String::new();
        if rows.is_empty() {
            s.push_str("no keys: run `ctx keys generate --id <name> --declare`\n");
        }
        for r in &rows {
            s.push_str(&format!(
                "{:<20} {:<12} private key: {:<10} {}\n",
                r["id"].as_str().unwrap_or(""),
                if r["declared"] == true {
                    "declared"
                } else {
                    "not declared"
                },
                r["private_key"].as_str().unwrap_or(""),
                r["fingerprint"].as_str().unwrap_or("")
            ));
        }
        for e in &errors {
            s.push_str(&format!("error: {e}\n"));
        }
        s
    };
    super::io_result(p.out(&out))?;
    Ok(if errors.is_empty() {
        Exit::Ok
    } else {
        Exit::Invalid
    })
}
