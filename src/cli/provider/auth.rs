//! `ctx provider auth init|rotate|revoke`: the request keys a delegated host
//! signs with (AtMem request authentication v1). Only key ids and secret-file
//! paths are printed, never a secret.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use ctx_core::error::{Exit, Result};
use ctx_core::provider::request_auth::{self as ra, Issued};

use crate::cli::args::TextFormat;
use crate::cli::{Global, Printer};

#[derive(Debug, Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    pub command: AuthCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Set up a request-authentication folder: a first key, the keyring, an empty nonce ledger.
    Init(InitArgs),
    /// Activate a fresh key; the previous one stays accepted for --overlap seconds.
    Rotate(RotateArgs),
    /// Stop accepting the previous key now.
    Revoke(RevokeArgs),
}

#[derive(Debug, Args, Clone)]
pub struct AuthDir {
    /// The request-authentication folder (default: provider-auth beside your signing keys,
    /// e.g. ~/.config/ctx/provider-auth).
    #[arg(long = "auth", value_name = "DIR")]
    pub auth_dir: Option<PathBuf>,
}

impl AuthDir {
    pub fn resolve(&self, g: &Global) -> Result<PathBuf> {
        match &self.auth_dir {
            Some(d) => Ok(crate::cli::input::absolute(&g.cwd, d)),
            None => ra::default_dir(),
        }
    }
}

#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub dir: AuthDir,
    /// Provider id the host registers (X-AtMem-Provider).
    #[arg(long = "provider", default_value = "ctx", value_name = "ID")]
    pub provider: String,
    /// Provider instance id (X-AtMem-Instance).
    #[arg(long = "instance", default_value = "local", value_name = "ID")]
    pub instance: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
}

#[derive(Debug, Args)]
pub struct RotateArgs {
    #[command(flatten)]
    pub dir: AuthDir,
    /// Seconds the previous key stays accepted (0-300).
    #[arg(long, default_value_t = ra::DEFAULT_OVERLAP_SECS, value_name = "SECS")]
    pub overlap: i64,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// The request key id to stop accepting (not the active one).
    pub key_id: String,
    #[command(flatten)]
    pub dir: AuthDir,
}

pub fn run(g: &Global, p: &Printer, a: &AuthArgs) -> Result<Exit> {
    match &a.command {
        AuthCommand::Init(x) => {
            let dir = x.dir.resolve(g)?;
            let issued = ra::init(&dir, &x.provider, &x.instance)?;
            let head = format!(
                "request authentication set up in {} for provider {}, instance {}\n",
                dir.display(),
                x.provider,
                x.instance
            );
            report(p, x.format, &head, &issued)
        }
        AuthCommand::Rotate(x) => {
            let dir = x.dir.resolve(g)?;
            let issued = ra::rotate(&dir, x.overlap, g.clock.now().timestamp())?;
            report(
                p,
                x.format,
                &format!("rotated the request key in {}\n", dir.display()),
                &issued,
            )
        }
        AuthCommand::Revoke(x) => {
            let dir = x.dir.resolve(g)?;
            ra::revoke(&dir, &x.key_id)?;
            crate::cli::io_result(p.out(&format!(
                "revoked {}: it is refused from the next request on\n",
                x.key_id
            )))?;
            Ok(Exit::Ok)
        }
    }
}

fn report(p: &Printer, format: TextFormat, head: &str, i: &Issued) -> Result<Exit> {
    let text = if format == TextFormat::Json {
        let v = json!({
            "transport_profile": ra::PROFILE,
            "request_key_id": i.key_id,
            "request_secret_file": i.secret_file,
            "previous_key_id": i.previous.as_ref().map(|(k, _)| k),
            "previous_valid_until": i.previous.as_ref().map(|(_, t)| t),
            "dropped_key_ids": i.dropped,
        });
        serde_json::to_string_pretty(&v).expect("JSON") + "\n"
    } else {
        let mut s = format!(
            "{head}  request_key_id:      {}\n  request_secret_file: {}\n",
            i.key_id,
            i.secret_file.display()
        );
        if let Some((k, t)) = &i.previous {
            s.push_str(&format!(
                "  previous key {k} accepted until {t} (Unix seconds)\n"
            ));
        }
        for k in &i.dropped {
            s.push_str(&format!("  no longer accepted: {k}\n"));
        }
        s.push_str("register the key id and the secret file's path with the host; never copy the secret itself\n");
        s
    };
    crate::cli::io_result(p.out(&text))?;
    Ok(Exit::Ok)
}
