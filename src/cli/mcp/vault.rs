//! A personal vault's `ctx mcp` flags, gathered into the server's options: who,
//! what scope and mode, and the secrets that unlock the vault (read here, never
//! from the MCP transport).

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Error, Result};

use crate::cli::args::{parse_duration, ConsumerArgs};
use crate::cli::personal::PasswordArgs;

/// Flags that apply to a personal vault only.
#[derive(Debug, Args)]
pub struct VaultArgs {
    #[command(flatten)]
    pub password: PasswordArgs,
    /// Personal vault: the secret key file (default: the one `ctx init` stored in your config folder).
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// Personal vault: the field id patterns the consumer's token covers, comma-separated
    /// (default `*`: what the vault's consumer role allows).
    #[arg(long, value_name = "PATTERNS")]
    pub scope: Option<String>,
    /// Personal vault: what the consumer's token may do (default `read`: writing only when asked for).
    #[arg(long, value_name = "MODE", value_parser = ["read", "write", "read-write"])]
    pub mode: Option<String>,
    /// Personal vault: lock after this long without requests (default: the vault's, 30m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub idle_timeout: Option<std::time::Duration>,
}

impl VaultArgs {
    pub(super) fn given(&self) -> bool {
        self.password.password_file.is_some()
            || self.secret_key_file.is_some()
            || self.scope.is_some()
            || self.mode.is_some()
            || self.idle_timeout.is_some()
    }

    /// A personal vault's server options: who, what scope and mode, and the secrets
    /// that unlock it (read here, never from the MCP transport).
    pub(super) fn options(
        &self,
        manifest: ctx_core::manifest::Manifest,
        who: &ConsumerArgs,
    ) -> Result<crate::mcp::personal::Options> {
        let v = self;
        use std::io::IsTerminal;
        let consumer = crate::mcp::personal_consumer(&manifest, &who.who())?;
        let scope: Vec<String> = match &v.scope {
            None => vec!["*".to_string()],
            Some(s) => s
                .split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect(),
        };
        if scope.is_empty() {
            return Err(Error::Usage(
                "--scope: give field id patterns such as `identity.*,addresses.current`".into(),
            ));
        }
        let mode = ctx_core::personal::tokens::Mode::parse(v.mode.as_deref().unwrap_or("read"))
            .ok_or_else(|| Error::Usage("--mode: read, write or read-write".into()))?;
        let cfg = ctx_core::personal::config::PersonalConfig::require(&manifest)?;
        let secret = crate::cli::personal::secret_key(&cfg, v.secret_key_file.as_deref())?;
        if v.password.password_file.is_none() && !std::io::stdin().is_terminal() {
            return Err(Error::Usage(
            "ctx mcp on a personal vault needs the profile password, and stdin carries the MCP transport: \
             give --password-file FILE (a file only you can read) in the client's configuration"
                .into(),
        ));
        }
        let password = v.password.read(false)?;
        Ok(crate::mcp::personal::Options {
            manifest,
            consumer,
            scope,
            mode,
            password,
            secret_key: secret.display(),
            idle_timeout: v.idle_timeout,
        })
    }
}
