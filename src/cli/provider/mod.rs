//! `ctx provider sign|verify|trust`: ctx as a delegated context provider
//! (`atmem.delegated-context-provider.v1`). `sign` turns a resolved bundle
//! (its Markdown or JSON rendering are the exact context bytes) or a
//! withholding decision into a signed envelope bound to one host turn;
//! `verify` runs the contract's checks and reports its failure code;
//! `trust` prints the host-side registration for a local key; `auth` manages
//! the request keys and `serve` answers a host over authenticated loopback
//! HTTP (AtMem request authentication v1); `conformance` runs its vectors.

use std::path::{Path, PathBuf};

mod args;
pub mod auth;
pub mod conformance;
#[cfg(feature = "serve")]
pub mod serve;
mod verify;

use clap::{Args, Subcommand, ValueEnum};

use ctx_core::error::{Error, Exit, Result};
use ctx_core::evidence::envelope::{self, EnvelopeRequest};
use ctx_core::keys;
use ctx_core::provider::{Binding, ProviderRef, Registration, TrustStore, WithholdReason};
use ctx_core::receipt;

use super::{Global, Printer};
pub use args::{SignArgs, TrustArgs, VerifyArgs};

#[derive(Debug, Args)]
pub struct ProviderArgs {
    #[command(subcommand)]
    pub command: ProviderCommand,
}

#[derive(Debug, Subcommand)]
pub enum ProviderCommand {
    /// Sign an envelope authorising a bundle's exact bytes, or withholding, for one turn.
    Sign(SignArgs),
    /// Verify an envelope as a host would; exit 1 with the contract's failure code.
    Verify(VerifyArgs),
    /// Print the host trust registration for a local key.
    Trust(TrustArgs),
    /// Request keys for delegated hosts (AtMem request authentication v1).
    Auth(auth::AuthArgs),
    /// Answer a delegated host on loopback: authenticated requests, signed envelopes.
    #[cfg(feature = "serve")]
    Serve(serve::ServeArgs),
    /// Run the request-authentication vectors (delegated-request-auth-v1.json).
    Conformance(conformance::ConformanceArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Rendering {
    Markdown,
    Json,
}

/// Who the provider is (must match the host's trust registration).
#[derive(Debug, Args, Clone)]
pub struct Identity {
    /// Provider id.
    #[arg(long = "provider", default_value = "ctx", value_name = "ID")]
    pub id: String,
    /// Provider version.
    #[arg(long = "provider-version", default_value = env!("CARGO_PKG_VERSION"), value_name = "VERSION")]
    pub provider_version: String,
    /// Provider instance id.
    #[arg(long = "instance", default_value = "local", value_name = "ID")]
    pub instance: String,
}

impl Identity {
    fn provider_ref(&self) -> ProviderRef {
        ProviderRef {
            id: self.id.clone(),
            version: self.provider_version.clone(),
            instance_id: self.instance.clone(),
        }
    }
}

pub fn run(g: &Global, p: &Printer, a: &ProviderArgs) -> Result<Exit> {
    match &a.command {
        ProviderCommand::Sign(x) => sign(g, p, x),
        ProviderCommand::Verify(x) => verify::run(g, p, x),
        ProviderCommand::Trust(x) => trust(g, p, x),
        ProviderCommand::Auth(x) => auth::run(g, p, x),
        #[cfg(feature = "serve")]
        ProviderCommand::Serve(x) => serve::run(g, p, x),
        ProviderCommand::Conformance(x) => conformance::run(g, p, x),
    }
}

fn abs(g: &Global, p: &Path) -> PathBuf {
    super::input::absolute(&g.cwd, p)
}

fn read(g: &Global, p: &Path) -> Result<Vec<u8>> {
    super::input::read_file(&abs(g, p))
}

fn binding(g: &Global, p: &Path) -> Result<Binding> {
    Binding::from_json_slice(&read(g, p)?)
        .map_err(|e| Error::Invalid(format!("{}: {e}", p.display())))
}

// The repository, when there is one (signing works outside repositories given --receipt).
use super::validate::optional_manifest as repo_manifest;

fn sign(g: &Global, p: &Printer, a: &SignArgs) -> Result<Exit> {
    let m = repo_manifest(g)?;
    let (bundle, receipt) = (
        a.bundle.as_deref().map(|f| abs(g, f)),
        a.receipt.as_deref().map(|f| abs(g, f)),
    );
    let envelope = envelope::sign(EnvelopeRequest {
        manifest: m.as_ref(),
        binding: binding(g, &a.binding)?,
        bundle: bundle.as_deref(),
        rendering: match a.render {
            Rendering::Markdown => envelope::Rendering::Markdown,
            Rendering::Json => envelope::Rendering::Json,
        },
        withhold: a.withhold.clone().map(|code| WithholdReason {
            code,
            retryable: a.retryable,
        }),
        receipt: receipt.as_deref(),
        provider: a.identity.provider_ref(),
        source_refs: a.source_refs.clone(),
        lifetime_secs: a.lifetime,
        created_at: a.created_at,
        key_id: &a.key,
    })?;
    let text = serde_json::to_string_pretty(&envelope).expect("JSON") + "\n";
    match super::printer::output_file(a.output.as_deref()) {
        Some(out) => {
            let path = abs(g, out);
            receipt::store::write_new(&path, text.as_bytes()).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Error::Invalid(format!(
                    "{}: already exists; envelopes are never overwritten",
                    path.display()
                )),
                _ => Error::io(&path, &e),
            })?;
            let _ = p.err(&format!(
                "wrote envelope {} ({}, expires {}, key {})\n",
                out.display(),
                envelope["decision"].as_str().unwrap_or(""),
                envelope["expires_at"].as_str().unwrap_or(""),
                a.key
            ));
        }
        None => super::io_result(p.out(&text))?,
    }
    Ok(Exit::Ok)
}

fn trust(g: &Global, p: &Printer, a: &TrustArgs) -> Result<Exit> {
    let m = repo_manifest(g)?;
    let key = keys::load(&a.key, m.as_ref().map(|m| m.root.as_path()))?;
    let r = Registration::new(a.identity.provider_ref(), a.key.clone(), key.public_key())
        .restricted_to(&a.workspaces, &a.agents, &a.users);
    let store = TrustStore::new(vec![r]).map_err(|e| Error::Invalid(e.to_string()))?;
    super::io_result(
        p.out(&(serde_json::to_string_pretty(&store.to_json()).expect("JSON") + "\n")),
    )?;
    Ok(Exit::Ok)
}
