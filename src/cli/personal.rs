//! What the personal-vault commands share: reading the profile password (from the
//! terminal without echo, or from `--password-file`), finding the secret key, and
//! `ctx private export-identity`.

use std::path::{Path, PathBuf};

use clap::Args;
use zeroize::Zeroizing;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::personal::config::PersonalConfig;
use ctx_core::personal::keys::{self, SecretKey};

use super::{Global, Printer};

/// Where the profile password comes from.
#[derive(Debug, Args, Clone, Default)]
pub struct PasswordArgs {
    /// Read the profile password from this file's first line (for scripts and tests).
    /// It must be yours, mode 600: one the group or others can read or write is refused.
    /// Default: ask on the terminal.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
}

impl PasswordArgs {
    /// The password; `confirm` asks twice on a terminal (a new vault).
    pub fn read(&self, confirm: bool) -> Result<Zeroizing<String>> {
        if let Some(f) = &self.password_file {
            let text = read_private(f)?;
            let line = Zeroizing::new(text.lines().next().unwrap_or("").to_string());
            if line.is_empty() {
                return Err(Error::Usage(format!(
                    "{}: the first line (the password) is empty",
                    f.display()
                )));
            }
            return Ok(line);
        }
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            return Err(Error::Usage(
                "the profile password is asked on a terminal; without one, give --password-file FILE".into(),
            ));
        }
        let p = Zeroizing::new(
            rpassword::prompt_password("Profile password: ")
                .map_err(|e| Error::io("terminal", &e))?,
        );
        if p.is_empty() {
            return Err(Error::Usage("the profile password cannot be empty".into()));
        }
        if confirm {
            let again = Zeroizing::new(
                rpassword::prompt_password("Repeat the password: ")
                    .map_err(|e| Error::io("terminal", &e))?,
            );
            if again.as_str() != p.as_str() {
                return Err(Error::Usage("the passwords differ".into()));
            }
        }
        Ok(p)
    }
}

/// Read a password file that only its owner may read or write: a file the group
/// or others can read has leaked the password already, one they can write lets
/// them choose it. Checked on the open handle, so the file read is the file judged.
fn read_private(f: &Path) -> Result<Zeroizing<String>> {
    use std::io::Read;
    let mut file = std::fs::File::open(f).map_err(|e| Error::io(f, &e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = file.metadata().map_err(|e| Error::io(f, &e))?;
        let mode = meta.mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(Error::InvalidHint {
                message: format!(
                    "{}: the password file has mode {mode:04o}, so other users can {} it",
                    f.display(),
                    match (mode & 0o044 != 0, mode & 0o022 != 0) {
                        (true, true) => "read and change",
                        (true, false) => "read",
                        _ => "change",
                    }
                ),
                help: format!(
                    "run `chmod 600 {}` (and choose a new password if others may have read it)",
                    f.display()
                ),
            });
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Err(Error::InvalidHint {
                message: format!(
                    "{}: the password file belongs to user id {}, not to you (user id {me})",
                    f.display(),
                    meta.uid()
                ),
                help: "keep the password in a file you own, with mode 600".into(),
            });
        }
    }
    let mut text = Zeroizing::new(String::new());
    file.read_to_string(&mut text)
        .map_err(|e| Error::io(f, &e))?;
    Ok(text)
}

/// The secret key of this vault: `--secret-key-file`, else the user's config folder.
pub fn secret_key(cfg: &PersonalConfig, file: Option<&Path>) -> Result<SecretKey> {
    let path = match file {
        Some(f) => f.to_path_buf(),
        None => keys::secret_key_path(&cfg.vault)?,
    };
    keys::load_secret_key(&path, &cfg.vault)
}

#[derive(Debug, Args)]
pub struct ExportIdentityArgs {
    /// Print the secret key of this category (repeatable). Nothing is printed
    /// unless you name what to print: this, `--all-categories` or `--all`.
    #[arg(long = "category", value_name = "NAME")]
    pub categories: Vec<String>,
    /// Print the secret key of every category.
    #[arg(long)]
    pub all_categories: bool,
    /// Print every category's key and those of the token store, the audit log and exports.
    #[arg(long)]
    pub all: bool,
    /// The secret key file (default: the one `ctx init` stored in your config folder).
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: Option<PathBuf>,
    #[command(flatten)]
    pub password: PasswordArgs,
}

/// `ctx private export-identity`: unlock, then print the derived age identities.
pub fn export_identity(g: &Global, p: &Printer, a: &ExportIdentityArgs) -> Result<Exit> {
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let cfg = PersonalConfig::require(&manifest)?;
    if a.categories.is_empty() && !a.all_categories && !a.all {
        return Err(Error::Usage(
            "export-identity prints secret keys: whoever holds them reads those categories without your password or secret key. Name what to print: --category NAME (repeatable), --all-categories, or --all (the vault's own stores too)".into(),
        ));
    }
    for c in &a.categories {
        if !cfg.categories.contains_key(c) {
            return Err(Error::Usage(format!(
                "no category `{c}` in this vault (categories: {})",
                cfg.categories
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let secret = secret_key(&cfg, a.secret_key_file.as_deref())?;
    let password = a.password.read(false)?;
    let k = keys::unlock_keys(&cfg, password.as_bytes(), &secret)?;
    let cats: Vec<String> = if a.categories.is_empty() {
        cfg.categories.keys().cloned().collect()
    } else {
        a.categories.clone()
    };
    let text = keys::identity_file(&cfg, &k, &cats, a.all);
    super::io_result(p.err(&format!(
        "warning: printing the secret keys of {} categor{}{}: anyone who reads them reads those fields with `age -d`, without ctx, your password or your secret key. Keep them off disk, or in a file only you can read.\n",
        cats.len(),
        if cats.len() == 1 { "y" } else { "ies" },
        if a.all { ", the token store, the audit log and exports" } else { "" }
    )))?;
    super::io_result(p.out(&text))?;
    Ok(Exit::Ok)
}
