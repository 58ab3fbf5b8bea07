//! `ctx provider sign|verify|trust`: ctx as a delegated context provider
//! (`atmem.delegated-context-provider.v1`). `sign` turns a resolved bundle
//! (its Markdown or JSON rendering are the exact context bytes) or a
//! withholding decision into a signed envelope bound to one host turn;
//! `verify` runs the contract's checks and reports its failure code;
//! `trust` prints the host-side registration for a local key.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::evidence::envelope::{self, EnvelopeRequest};
use ctx_core::keys;
use ctx_core::manifest::Manifest;
use ctx_core::provider::{
    self, Binding, ContextFile, ProviderRef, Registration, StateDir, TrustStore, WithholdReason,
};
use ctx_core::receipt;

use super::{Global, Printer};

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

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The host turn the result is for: JSON with run_id, turn_id, session_id, agent_id, user_id, workspace_id.
    #[arg(long, value_name = "FILE")]
    pub binding: PathBuf,
    /// Signing key id (from `ctx keys`); also the envelope's key_id.
    #[arg(long, value_name = "ID")]
    pub key: String,
    /// The resolved bundle (JSON) whose rendering is injected.
    #[arg(long, value_name = "FILE", required_unless_present = "withhold")]
    pub bundle: Option<PathBuf>,
    /// Which rendering of the bundle is the exact context.
    #[arg(long, value_enum, default_value = "markdown")]
    pub render: Rendering,
    /// Authorise withholding instead, with this reason code (e.g. POLICY_DENIED).
    #[arg(long, value_name = "CODE")]
    pub withhold: Option<String>,
    /// The withholding may succeed if retried.
    #[arg(long, requires = "withhold")]
    pub retryable: bool,
    /// The ctx receipt to cite (default: the bundle's current receipt in .ctx/receipts).
    #[arg(long, value_name = "FILE")]
    pub receipt: Option<PathBuf>,
    #[command(flatten)]
    pub identity: Identity,
    /// Opaque source reference to include (repeatable).
    #[arg(long = "source-ref", value_name = "REF")]
    pub source_refs: Vec<String>,
    /// Seconds until the envelope expires (1-300).
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub lifetime: i64,
    /// Issue time (RFC 3339; default now).
    #[arg(long, value_name = "TIME")]
    pub created_at: Option<String>,
    /// Write the envelope to this file (atomically, never over an existing file).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The envelope file, verified byte-for-byte as received.
    pub envelope: PathBuf,
    /// Trusted registrations (one object or an array, in the contract's trust.json form).
    #[arg(long, value_name = "FILE")]
    pub trust: PathBuf,
    /// The host's authenticated binding for this turn.
    #[arg(long, value_name = "FILE")]
    pub binding: PathBuf,
    /// Verification time (RFC 3339; default now).
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// Acceptance-state folder: one result per turn, nonce and idempotency checks
    /// (default: .ctx/provider-state in the repository, else
    /// $XDG_STATE_HOME/ctx/provider-state).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Record nothing: no one-result-per-turn, nonce or replay protection.
    #[arg(long, conflicts_with = "state")]
    pub no_state: bool,
    /// Write the verified context bytes, exactly, to this new file (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub context_out: Option<PathBuf>,
    /// Accept registrations marked fixture_key_only (conformance tests only).
    #[arg(long)]
    pub allow_fixture_keys: bool,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Local key id.
    #[arg(long, value_name = "ID")]
    pub key: String,
    #[command(flatten)]
    pub identity: Identity,
    /// Allowed workspace id (repeatable; default any).
    #[arg(long = "workspace", value_name = "ID")]
    pub workspaces: Vec<String>,
    /// Allowed agent id (repeatable; default any).
    #[arg(long = "agent", value_name = "ID")]
    pub agents: Vec<String>,
    /// Allowed user id (repeatable; default any).
    #[arg(long = "user", value_name = "ID")]
    pub users: Vec<String>,
}

pub fn run(g: &Global, p: &Printer, a: &ProviderArgs) -> Result<Exit> {
    match &a.command {
        ProviderCommand::Sign(x) => sign(g, p, x),
        ProviderCommand::Verify(x) => verify(g, p, x),
        ProviderCommand::Trust(x) => trust(g, p, x),
    }
}

fn abs(g: &Global, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        g.cwd.join(p)
    }
}

fn read(g: &Global, p: &Path) -> Result<Vec<u8>> {
    let path = abs(g, p);
    std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::NotFound(format!("{}: no such file", path.display()))
        }
        _ => Error::io(&path, &e),
    })
}

fn binding(g: &Global, p: &Path) -> Result<Binding> {
    Binding::from_json_slice(&read(g, p)?)
        .map_err(|e| Error::Invalid(format!("{}: {e}", p.display())))
}

/// The repository, when there is one (signing works outside repositories
/// given --receipt).
fn repo_manifest(g: &Global) -> Result<Option<Manifest>> {
    match Manifest::discover(g.dir.as_deref(), &g.cwd) {
        Ok((m, _)) => Ok(Some(m)),
        Err(Error::ManifestNotFound { .. }) if g.dir.is_none() => Ok(None),
        Err(e) => Err(e),
    }
}

fn sign(g: &Global, p: &Printer, a: &SignArgs) -> Result<Exit> {
    let m = repo_manifest(g)?;
    let created_at = match &a.created_at {
        Some(t) => Some(ctx_core::time::parse_timestamp(t).ok_or_else(|| {
            Error::Usage(format!("--created-at `{t}` is not an RFC 3339 instant"))
        })?),
        None => None,
    };
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
        created_at,
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

/// The acceptance state a verification records into: `--state`, else the
/// default folder (per repository, or per user); None only with `--no-state`.
fn state_dir(g: &Global, a: &VerifyArgs) -> Result<Option<StateDir>> {
    if a.no_state {
        return Ok(None);
    }
    let dir = match &a.state {
        Some(d) => abs(g, d),
        None => {
            // Only the manifest's folder matters here, so a manifest that does not parse
            // still places the state in its repository.
            let repo = match ctx_core::manifest::discover::locate(g.dir.as_deref(), &g.cwd) {
                Ok(found) => found.path.parent().map(Path::to_path_buf),
                Err(Error::ManifestNotFound { .. }) if g.dir.is_none() => None,
                Err(e) => return Err(e),
            };
            provider::default_state_dir(repo.as_deref()).ok_or_else(|| {
                Error::Usage(
                    "no folder for the acceptance state: pass --state DIR (or --no-state to verify without replay protection)"
                        .into(),
                )
            })?
        }
    };
    StateDir::open(dir)
        .map(Some)
        .map_err(|e| Error::Invalid(e.to_string()))
}

fn verify(g: &Global, p: &Printer, a: &VerifyArgs) -> Result<Exit> {
    let bytes = read(g, &a.envelope)?;
    let trust = TrustStore::from_json_slice(&read(g, &a.trust)?, a.allow_fixture_keys)
        .map_err(|e| Error::Invalid(format!("{}: {e}", a.trust.display())))?;
    let binding = binding(g, &a.binding)?;
    // The default clock keeps full precision: truncating it would accept an
    // envelope for up to a second after an `expires_at` with a fraction.
    let at = match &a.at {
        Some(t) => super::resolve::at_flag(Some(t))?,
        None => chrono::Utc::now(),
    };
    let state = state_dir(g, a)?;
    let to_stdout = a.context_out.as_deref() == Some(Path::new("-"));
    // Claimed before verification, so a refused file reserves nothing.
    let claimed = match &a.context_out {
        Some(out) if !to_stdout => {
            let path = abs(g, out);
            Some(ContextFile::claim(path.clone()).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Error::Invalid(format!(
                    "{}: already exists; verified context is never written over a file (nothing was verified or reserved)",
                    path.display()
                )),
                _ => Error::io(&path, &e),
            })?)
        }
        _ => None,
    };
    let result = provider::verify_envelope(&bytes, &trust, &binding, at, state.as_ref());
    let json_out = a.format == "json";
    let recorded = match &state {
        Some(s) => format!(" (state {})", s.path().display()),
        None => " (--no-state: nothing was recorded, so this turn has no one-result, nonce or replay protection)".into(),
    };
    let state_json = json!(state.as_ref().map(|s| s.path().display().to_string()));
    match result {
        Ok(acc) => {
            match (claimed, &acc.context) {
                (Some(file), Some(ctx)) => {
                    let path = file.path().to_path_buf();
                    file.fill(ctx.as_bytes())
                        .map_err(|e| Error::io(&path, &e))?;
                }
                (None, Some(ctx)) if to_stdout => super::io_result(p.out(ctx))?,
                // A withholding has no bytes: the unfilled claim is removed when dropped.
                _ => {}
            }
            let text = if json_out {
                serde_json::to_string_pretty(
                    &json!({"accepted": true, "evidence": acc.evidence(), "state": state_json}),
                )
                .expect("JSON")
                    + "\n"
            } else {
                let what = match &acc.context_sha256 {
                    Some(h) => format!(
                        "inject of {} bytes (sha256 {h})",
                        acc.context.as_ref().map_or(0, String::len)
                    ),
                    None => format!(
                        "withhold ({})",
                        acc.withhold_reason.as_ref().map_or("", |r| r.code.as_str())
                    ),
                };
                format!(
                    "accepted: {what}\n  provider {} {} instance {}, key {}\n  acceptance: {}{recorded}\n  note: this proves the provider authorised it for this turn, not that it was delivered\n",
                    acc.provider.id, acc.provider.version, acc.provider.instance_id, acc.key_id, acc.acceptance.as_str()
                )
            };
            // With --context-out -, stdout carries the exact bytes only.
            if to_stdout {
                let _ = p.err(&text);
            } else {
                super::io_result(p.out(&text))?;
            }
            Ok(Exit::Ok)
        }
        Err(f) => {
            drop(claimed); // removes the placeholder
            let text = if json_out {
                serde_json::to_string_pretty(
                    &json!({"accepted": false, "failure": f.to_json(), "state": state_json}),
                )
                .expect("JSON")
                    + "\n"
            } else {
                format!("rejected: {f}\n")
            };
            super::io_result(p.out(&text))?;
            Ok(Exit::Invalid)
        }
    }
}

fn trust(g: &Global, p: &Printer, a: &TrustArgs) -> Result<Exit> {
    let m = repo_manifest(g)?;
    let key = keys::load(&a.key, m.as_ref().map(|m| m.root.as_path()))?;
    let mut r = Registration::new(a.identity.provider_ref(), a.key.clone(), key.public_key());
    for (list, given) in [
        (&mut r.workspace_ids, &a.workspaces),
        (&mut r.agent_ids, &a.agents),
        (&mut r.user_ids, &a.users),
    ] {
        if !given.is_empty() {
            *list = given.clone();
        }
    }
    let store = TrustStore::new(vec![r]).map_err(|e| Error::Invalid(e.to_string()))?;
    super::io_result(
        p.out(&(serde_json::to_string_pretty(&store.to_json()).expect("JSON") + "\n")),
    )?;
    Ok(Exit::Ok)
}
