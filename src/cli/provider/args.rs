//! The arguments of `ctx provider sign|verify|trust`.

use std::path::PathBuf;

use clap::Args;

use ctx_core::time::Instant;

use super::{Identity, Rendering};
use crate::cli::args::{parse_at, parse_instant, TextFormat};

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
    #[arg(long, value_name = "TIME", value_parser = parse_instant)]
    pub created_at: Option<Instant>,
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
    /// Verification time (RFC 3339, or a date meaning its end; default now).
    #[arg(long, value_name = "TIME", value_parser = parse_at)]
    pub at: Option<Instant>,
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
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
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
