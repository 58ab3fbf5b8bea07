//! `ctx private`: encrypt, decrypt, edit, rekey and inspect private collections
//! (age-encrypted; see docs/private.md). The operations live in
//! `ctx_core::private`; this file parses, calls and renders. A missing
//! identity exits 2, a named identity file that does not exist exits 3.

mod batch;
mod edit;
mod status;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use ctx_core::diag::render::{self, HumanStyle};
use ctx_core::error::{Error, Exit, Result};
use ctx_core::private::scope::{find_identity, format_of};
use ctx_core::private::{ops, Keyring, Scope};

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct PrivateArgs {
    #[command(subcommand)]
    pub command: PrivateCommand,
}

#[derive(Debug, Args, Clone, Default)]
pub struct IdentityArgs {
    /// age identity file: age keys (optionally passphrase-protected) or an SSH key.
    /// Repeatable. Default: $CTX_AGE_IDENTITY, then ~/.config/ctx/age/identity.txt.
    #[arg(long = "identity", short = 'i', value_name = "FILE")]
    pub identity: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum PrivateCommand {
    /// Encrypt plaintext members of private collections in place (all of them without PATH).
    Encrypt {
        /// Files or folders inside private collections.
        paths: Vec<PathBuf>,
    },
    /// Print a private file's plaintext to stdout (never to a file).
    Decrypt {
        /// The encrypted member to print.
        path: PathBuf,
        #[command(flatten)]
        id: IdentityArgs,
    },
    /// Edit a private file in $VISUAL/$EDITOR via a private, memory-backed temporary file.
    Edit {
        /// An encrypted member, or a new file inside a private collection.
        path: PathBuf,
        #[command(flatten)]
        id: IdentityArgs,
    },
    /// Re-encrypt every private file whose recipients differ from the manifest's.
    Rekey {
        /// Re-encrypt every file, even those already encrypted to the current recipients.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        id: IdentityArgs,
    },
    /// Which files are encrypted, to whom, and which are plaintext by mistake.
    Status {
        /// Also decrypt each file with your identity to check that it opens.
        #[arg(long)]
        check: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: super::args::TextFormat,
        #[command(flatten)]
        id: IdentityArgs,
    },
    /// Personal vaults: print the age identities derived from your password and secret key
    /// (what the `age` CLI and `--identity` need to open the vault's files).
    ExportIdentity(super::personal::ExportIdentityArgs),
    /// Personal vaults made before ctx authenticated a vault's files: review what the
    /// vault holds, then authenticate it (unlock refuses it until then).
    UpgradeVault(super::vault_upgrade::UpgradeArgs),
}

pub fn run(g: &Global, p: &Printer, a: &PrivateArgs) -> Result<Exit> {
    match &a.command {
        PrivateCommand::Encrypt { paths } => batch::encrypt(g, p, paths),
        PrivateCommand::ExportIdentity(a) => super::personal::export_identity(g, p, a),
        PrivateCommand::UpgradeVault(a) => super::vault_upgrade::run(g, p, a),
        PrivateCommand::Decrypt { path, id } => decrypt(g, p, path, id),
        PrivateCommand::Edit { path, id } => edit::run(g, p, path, id),
        PrivateCommand::Rekey { force, id } => batch::rekey(g, p, *force, id),
        PrivateCommand::Status { check, format, id } => {
            status::run(g, p, *check, *format == super::args::TextFormat::Json, id)
        }
    }
}

/// Print configuration problems; true when there are errors.
pub(crate) fn report_config(p: &Printer, scope: &Scope) -> bool {
    if scope.cfg_diags.is_empty() {
        return false;
    }
    let style = HumanStyle {
        color: p.color_err,
        width: p.width,
    };
    let _ = p.err(&render::human(&scope.cfg_diags, &scope.m.root, style));
    scope.config_failed()
}

/// The identity for this run; warns about identity files others can read.
pub(crate) fn keyring(p: &Printer, a: &IdentityArgs) -> Result<Option<Keyring>> {
    let ring = find_identity(&a.identity)?;
    for path in ring.iter().flat_map(Keyring::loose_permissions) {
        let _ = p.err(&format!(
            "warning: identity file {} is readable by other users; run `chmod 600 {}`\n",
            path.display(),
            path.display()
        ));
    }
    Ok(ring)
}

fn decrypt(g: &Global, p: &Printer, path: &Path, ida: &IdentityArgs) -> Result<Exit> {
    let shown = path.display().to_string();
    let abs = g.cwd.join(path);
    let format = format_of(&shown)?;
    let text = std::fs::read_to_string(&abs).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound(format!("{shown}: no such file")),
        _ => Error::io(&abs, &e),
    })?;
    let ring = keyring(p, ida)?;
    let opened = ops::open_file(&shown, format, &text, ring.as_ref())?;
    if !opened.mismatched.is_empty() {
        let _ = p.err(&format!(
            "warning: {shown}: the clear metadata does not match the encrypted copy ({}); `ctx private edit` rewrites it from the plaintext\n",
            opened.mismatched.join(", ")
        ));
    }
    let _ = p.err(&format!("decrypted {shown} with {}\n", opened.key));
    super::io_result(p.out(&opened.plaintext))?;
    Ok(Exit::Ok)
}
