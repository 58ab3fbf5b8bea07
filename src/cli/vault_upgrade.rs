//! `ctx private upgrade-vault`: review what a vault from before authentication holds
//! (ids, tiers, writers, consumers, tokens; never a value), then, once the user
//! agrees (on the terminal, or `--yes`), authenticate it (docs/personal.md).

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::personal::config::PersonalConfig;
use ctx_core::personal::holder::VaultLock;
use ctx_core::personal::integrity::Seen;
use ctx_core::personal::keys;
use ctx_core::personal::upgrade::Survey;

use super::personal::{secret_key, PasswordArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// Authenticate without asking (the review is still printed).
    #[arg(long)]
    pub yes: bool,
    /// Keep the service tokens the store holds (default: dropped; consumers ask for new ones).
    #[arg(long)]
    pub keep_tokens: bool,
    /// The secret key file (default: the one `ctx init` stored in your config folder).
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: Option<PathBuf>,
    #[command(flatten)]
    pub password: PasswordArgs,
}

pub fn run(g: &Global, p: &Printer, a: &UpgradeArgs) -> Result<Exit> {
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let cfg = PersonalConfig::require(&manifest)?;
    let secret = secret_key(&cfg, a.secret_key_file.as_deref())?;
    let password = a.password.read(false)?;
    let k = keys::unlock_keys(&cfg, password.as_bytes(), &secret)?;
    drop(password);
    let _held = VaultLock::acquire(&cfg.state_dir(&manifest), "ctx private upgrade-vault")?;
    let survey = Survey::read(manifest, k, Seen::Config)?;
    super::io_result(p.out(&review(&survey, a.keep_tokens)))?;
    if !a.yes && !confirmed()? {
        return Err(Error::Usage(
            "nothing was changed: answer `yes` on a terminal, or give --yes".into(),
        ));
    }
    let done = survey.apply(a.keep_tokens, &ctx_core::time::format(&g.clock.now()))?;
    super::io_result(p.out(&format!(
        "authenticated {} field(s) and {} consumer(s); {} service token(s) kept, {} dropped\n",
        done.fields, done.consumers, done.tokens_kept, done.tokens_dropped
    )))?;
    Ok(Exit::Ok)
}

/// What the upgrade would vouch for, one line each.
fn review(s: &Survey, keep_tokens: bool) -> String {
    let mut out = String::from(
        "This vault has no authenticated index. The upgrade vouches for everything below as yours:\n",
    );
    out.push_str(&format!("fields ({}):\n", s.fields.len()));
    for f in &s.fields {
        out.push_str(&format!(
            "  {:<32} {:<9} written by {:<16} version {} updated {}\n",
            f.id, f.tier, f.written_by, f.version, f.updated_at
        ));
    }
    out.push_str(&format!("consumers ({}):\n", s.consumers.len()));
    for (name, at) in &s.consumers {
        out.push_str(&format!("  {name:<32} registered {at}\n"));
    }
    out.push_str(&format!(
        "service tokens ({}): {}\n",
        s.tokens.len(),
        if keep_tokens {
            "kept (--keep-tokens)"
        } else {
            "dropped; consumers ask for new ones"
        }
    ));
    for t in &s.tokens {
        out.push_str(&format!(
            "  {}…  {}  scope {}  {}  expires {}\n",
            t.shown,
            t.consumer.as_deref().unwrap_or("user"),
            t.scope.join(", "),
            t.mode.as_str(),
            t.expires_at.as_deref().unwrap_or("never")
        ));
    }
    if !s.refused.is_empty() {
        out.push_str(&format!("not vouched for ({}):\n", s.refused.len()));
        for pr in &s.refused {
            out.push_str(&format!("  {pr}\n"));
        }
    }
    out.push_str(
        "Anything above that you did not write or register was planted: delete it after the upgrade.\n",
    );
    out
}

/// Ask on the terminal; without one, the answer is no.
fn confirmed() -> Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!("Authenticate this vault's files as listed? Type `yes`: ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Error::io("terminal", &e))?;
    Ok(line.trim() == "yes")
}
