//! Who an installed entry serves, checked by the rule `ctx mcp` itself applies at
//! launch: a repository's agent or role through [`crate::mcp::identity`], a personal
//! vault's consumer through [`crate::mcp::personal_consumer`], plus the flags a
//! vault's server needs to unlock without a terminal.

use std::path::{Path, PathBuf};

use clap::Args;

use ctx_core::error::{Error, Result};
use ctx_core::manifest::Manifest;

use crate::cli::args::ConsumerArgs;
use crate::cli::Global;
use crate::mcp::install;

/// The personal-vault flags the entry passes on to `ctx mcp`.
#[derive(Debug, Args)]
pub struct VaultEntryArgs {
    /// Personal vault: the profile password file the server reads (required there: the host
    /// starts it without a terminal). Keep it readable by you only.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// Personal vault: the secret key file (default: the one `ctx init` stored).
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// Personal vault: the field id patterns the consumer's token covers (`ctx mcp --scope`).
    #[arg(long, value_name = "PATTERNS")]
    pub token_scope: Option<String>,
    /// Personal vault: what the consumer's token may do.
    #[arg(long, value_name = "MODE", value_parser = ["read", "write", "read-write"])]
    pub mode: Option<String>,
}

impl VaultEntryArgs {
    fn given(&self) -> bool {
        self.password_file.is_some()
            || self.secret_key_file.is_some()
            || self.token_scope.is_some()
            || self.mode.is_some()
    }
}

/// A repository's consumer flags, after the same check `ctx mcp` makes at launch.
pub fn repository_flags(
    g: &Global,
    who: &ConsumerArgs,
    vault: &VaultEntryArgs,
) -> Result<Vec<String>> {
    if vault.given() {
        return Err(Error::Usage(
            "--password-file, --secret-key-file, --token-scope and --mode apply to a personal vault; this repository is not one".into(),
        ));
    }
    let cfg = crate::mcp::Config {
        dir: g.dir.clone(),
        cwd: g.cwd.clone(),
        offline: g.offline,
    };
    let (resolved, _, _) = crate::mcp::identity(&cfg, &who.who())?;
    Ok(install::consumer_flags(&who.who(), &resolved))
}

/// A personal vault's flags: its consumer (the rule `ctx mcp` applies on a vault),
/// the password file (absolute, so it holds wherever the host starts the server),
/// and the token's scope and mode.
pub fn vault_flags(
    g: &Global,
    manifest: &Manifest,
    who: &ConsumerArgs,
    vault: &VaultEntryArgs,
) -> Result<Vec<String>> {
    ctx_core::manifest::roles::require_sound(manifest)?;
    let consumer = crate::mcp::personal_consumer(manifest, &who.who())?;
    if manifest.agents.contains_key(&consumer) {
        ctx_core::resolve::Consumer::from_flags(manifest, Some(&consumer), &[])?;
    }
    let password = vault.password_file.as_deref().ok_or_else(|| {
        Error::Usage(
            "a personal vault's server reads the profile password from a file (the host gives it no terminal): \
             give --password-file FILE, a file only you can read"
                .into(),
        )
    })?;
    if let Some(m) = &vault.mode {
        ctx_core::personal::tokens::Mode::parse(m)
            .ok_or_else(|| Error::Usage("--mode: read, write or read-write".into()))?;
    }
    // The consumer must be one the vault knows, as `ctx mcp` requires at launch.
    let secret_key = {
        let cfg = ctx_core::personal::config::PersonalConfig::require(manifest)?;
        let key_file = vault.secret_key_file.as_deref().map(|k| g.cwd.join(k));
        crate::cli::personal::secret_key(&cfg, key_file.as_deref())?.display()
    };
    let pw = crate::cli::personal::PasswordArgs {
        password_file: Some(g.cwd.join(password)),
    }
    .read(false)?;
    crate::mcp::personal::check_registered(manifest.clone(), &consumer, &pw, &secret_key)?;
    let mut flags = Vec::new();
    if !who.is_empty() {
        flags.extend(["--agent".to_string(), consumer]);
    }
    flags.extend(["--password-file".to_string(), existing_file(g, password)?]);
    if let Some(key) = &vault.secret_key_file {
        flags.extend(["--secret-key-file".to_string(), existing_file(g, key)?]);
    }
    if let Some(s) = &vault.token_scope {
        flags.extend(["--scope".to_string(), s.clone()]);
    }
    if let Some(m) = &vault.mode {
        flags.extend(["--mode".to_string(), m.clone()]);
    }
    Ok(flags)
}

/// `path` as an absolute UTF-8 path to a regular file that exists now.
fn existing_file(g: &Global, path: &Path) -> Result<String> {
    let abs = g.cwd.join(path);
    let abs = std::fs::canonicalize(&abs).map_err(|e| Error::io(&abs, &e))?;
    if !abs.is_file() {
        return Err(Error::Usage(format!(
            "{}: not a regular file",
            abs.display()
        )));
    }
    abs.to_str().map(str::to_string).ok_or_else(|| {
        Error::Usage(format!(
            "{}: the path is not UTF-8, so no host file can name it",
            abs.display()
        ))
    })
}
