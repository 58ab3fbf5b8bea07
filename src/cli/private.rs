//! `ctx private`: encrypt, decrypt, edit, rekey and inspect private collections
//! (age-encrypted; see docs/private.md). Decrypted plaintext goes to stdout or to
//! the editor's private temporary file, never into the repository.

mod edit;
mod status;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use ctx_core::diag::render::{self, HumanStyle};
use ctx_core::diag::Diagnostic;
use ctx_core::error::{Error, Exit, Result};
use ctx_core::load::walk::{self, Member, MemberSource};
use ctx_core::manifest::Manifest;
use ctx_core::object::Format;
use ctx_core::private::config::{short, CollectionKeys};
use ctx_core::private::{format, ops, Keyring, PrivateConfig};

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
        /// `human` (default) or `json`.
        #[arg(long, default_value = "human", value_parser = ["human", "json"])]
        format: String,
        #[command(flatten)]
        id: IdentityArgs,
    },
}

pub fn run(g: &Global, p: &Printer, a: &PrivateArgs) -> Result<Exit> {
    match &a.command {
        PrivateCommand::Encrypt { paths } => encrypt(g, p, paths),
        PrivateCommand::Decrypt { path, id } => decrypt(g, p, path, id),
        PrivateCommand::Edit { path, id } => edit::run(g, p, path, id),
        PrivateCommand::Rekey { force, id } => rekey(g, p, *force, id),
        PrivateCommand::Status { check, format, id } => {
            status::run(g, p, *check, format == "json", id)
        }
    }
}

/// The repository as far as private collections are concerned.
pub(crate) struct Scope {
    pub m: Manifest,
    pub cfg: PrivateConfig,
    pub cfg_diags: Vec<Diagnostic>,
    /// Every member file (private or not), sorted.
    pub members: Vec<Member>,
}

impl Scope {
    pub fn load(g: &Global) -> Result<Scope> {
        let (m, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
        let (cfg, cfg_diags) = PrivateConfig::from_manifest(&m);
        let (members, _) = walk::members(&m);
        Ok(Scope {
            m,
            cfg,
            cfg_diags,
            members,
        })
    }

    /// The private collection a member belongs to.
    pub fn keys_of(&self, member: &Member) -> Option<&CollectionKeys> {
        match &member.source {
            MemberSource::Collection { name, .. } => self.cfg.collection(name),
            MemberSource::Entry { .. } => None,
        }
    }

    pub fn private_members(&self) -> impl Iterator<Item = (&Member, &CollectionKeys)> {
        self.members
            .iter()
            .filter_map(|m| self.keys_of(m).map(|k| (m, k)))
    }

    /// A path given on the command line, relative to the repository (`/`-separated).
    pub fn rel(&self, g: &Global, path: &Path) -> Result<String> {
        ctx_core::fs::confine::rel_in_root(&self.m.root, &g.cwd, path)
            .map(String::from)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{} is outside the repository at {}",
                    path.display(),
                    self.m.root.display()
                ))
            })
    }

    /// Print configuration problems; true when there are errors.
    pub fn report_config(&self, p: &Printer) -> bool {
        if self.cfg_diags.is_empty() {
            return false;
        }
        let text = render::human(
            &self.cfg_diags,
            &self.m.root,
            HumanStyle {
                color: p.color_err,
                width: p.width,
            },
        );
        let _ = p.err(&text);
        ctx_core::validate::failed(&self.cfg_diags, false)
    }
}

/// The identity for this run; warns about identity files others can read.
pub(crate) fn keyring(p: &Printer, a: &IdentityArgs) -> Result<Option<Keyring>> {
    let ring = Keyring::discover(&a.identity).map_err(Error::Usage)?;
    if let Some(r) = &ring {
        for path in r.loose_permissions() {
            let _ = p.err(&format!(
                "warning: identity file {} is readable by other users; run `chmod 600 {}`\n",
                path.display(),
                path.display()
            ));
        }
    }
    Ok(ring)
}

pub(crate) fn format_of(rel: &str) -> Result<Format> {
    Format::from_path(rel).ok_or_else(|| {
        Error::Usage(format!(
            "{rel}: only .md, .yaml, .yml and .json files can be private"
        ))
    })
}

/// Replace a file atomically (temporary file in the same folder, then rename),
/// keeping its permission bits.
pub(crate) fn write_in_place(path: &Path, text: &str) -> Result<()> {
    ctx_core::fs::write_atomic(
        path,
        text.as_bytes(),
        ctx_core::fs::Mode::Preserve,
        ctx_core::fs::Existing::Replace,
    )
    .map_err(|e| Error::io(path, &e))
}

fn encrypt(g: &Global, p: &Printer, paths: &[PathBuf]) -> Result<Exit> {
    let scope = Scope::load(g)?;
    if scope.report_config(p) {
        return Ok(Exit::Invalid);
    }
    if scope.cfg.is_empty() {
        return Err(Error::Usage("this repository declares no private collections (add `extensions.ctx.private.collections` to the manifest; see docs/private.md)".into()));
    }
    let mut targets: Vec<(&Member, &CollectionKeys)> = Vec::new();
    if paths.is_empty() {
        targets.extend(scope.private_members());
    }
    for path in paths {
        let rel = scope.rel(g, path)?;
        let before = targets.len();
        targets.extend(scope.private_members().filter(|(m, _)| {
            rel.is_empty() || m.rel == rel || m.rel.starts_with(&format!("{rel}/"))
        }));
        if targets.len() == before {
            return Err(Error::Usage(format!(
                "{} is not a member of a private collection (private collections: {})",
                path.display(),
                scope
                    .cfg
                    .collections
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    targets.sort_by(|a, b| a.0.rel.cmp(&b.0.rel));
    targets.dedup_by(|a, b| a.0.rel == b.0.rel);
    let (mut done, mut already, mut failed) = (0, 0, 0);
    let mut report = String::new();
    for (member, keys) in targets {
        let format = format_of(&member.rel)?;
        let text = std::fs::read_to_string(&member.abs).map_err(|e| Error::io(&member.abs, &e))?;
        match format::parse_sealed(format, &text) {
            Ok(Some(s)) => {
                already += 1;
                if s.recipients != keys.keys() {
                    report.push_str(&format!(
                        "stale      {}  encrypted to an outdated recipient list: run `ctx private rekey`\n",
                        member.rel
                    ));
                }
            }
            Err(e) => {
                failed += 1;
                let _ = p.err(&format!("error: {}: {e}\n", member.rel));
            }
            Ok(None) => match ops::seal(format, &text, keys, None, None, false) {
                Ok(sealing) => {
                    write_in_place(&member.abs, &sealing.text)?;
                    done += 1;
                    report.push_str(&format!(
                        "encrypted  {}  to {} recipient(s)\n",
                        member.rel,
                        keys.recipients.len()
                    ));
                }
                Err(e) => {
                    failed += 1;
                    let _ = p.err(&format!(
                        "error: {}: cannot encrypt: {e}\n  fix: correct the file, then run `ctx private encrypt {}`\n",
                        member.rel, member.rel
                    ));
                }
            },
        }
    }
    report.push_str(&format!(
        "{done} encrypted, {already} already encrypted, {failed} failed\n"
    ));
    super::io_result(p.out(&report))?;
    Ok(if failed > 0 { Exit::Invalid } else { Exit::Ok })
}

fn decrypt(g: &Global, p: &Printer, path: &Path, ida: &IdentityArgs) -> Result<Exit> {
    let shown = path.display().to_string();
    let abs = g.cwd.join(path);
    let format = format_of(&shown)?;
    let text = std::fs::read_to_string(&abs).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound(format!("{shown}: no such file")),
        _ => Error::io(&abs, &e),
    })?;
    let sealed = format::parse_sealed(format, &text)
        .map_err(|e| Error::Invalid(format!("{shown}: {e}")))?
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{shown} is not encrypted (no `extensions.ctx.private.encrypted: true`)"
            ))
        })?;
    let ring = keyring(p, ida)?;
    let (plain, key) = ops::decrypt(&shown, &sealed.armor, ring.as_ref())
        .map_err(|e| Error::Invalid(format!("{e}\n  fix: {}", e.fix())))?;
    if let Ok(doc) = format::parse_doc(format, &plain) {
        let bad = ops::mismatched(&sealed.header, &doc.fields);
        if !bad.is_empty() {
            let _ = p.err(&format!(
                "warning: {shown}: the clear metadata does not match the encrypted copy ({}); `ctx private edit` rewrites it from the plaintext\n",
                bad.join(", ")
            ));
        }
    }
    let _ = p.err(&format!("decrypted {shown} with {key}\n"));
    super::io_result(p.out(&plain))?;
    Ok(Exit::Ok)
}

fn rekey(g: &Global, p: &Printer, force: bool, ida: &IdentityArgs) -> Result<Exit> {
    let scope = Scope::load(g)?;
    if scope.report_config(p) {
        return Ok(Exit::Invalid);
    }
    let ring = keyring(p, ida)?.ok_or_else(|| {
        Error::Usage("rekey decrypts every private file: give an identity that can (--identity FILE, CTX_AGE_IDENTITY, or ~/.config/ctx/age/identity.txt)".into())
    })?;
    let (mut changed, mut current, mut failed) = (0, 0, 0);
    let mut removed_any = false;
    let mut report = String::new();
    for (member, keys) in scope.private_members() {
        let format = format_of(&member.rel)?;
        let text = std::fs::read_to_string(&member.abs).map_err(|e| Error::io(&member.abs, &e))?;
        let sealed = match format::parse_sealed(format, &text) {
            Ok(Some(s)) => s,
            Ok(None) => {
                failed += 1;
                report.push_str(&format!(
                    "PLAINTEXT  {}  run `ctx private encrypt {}`\n",
                    member.rel, member.rel
                ));
                continue;
            }
            Err(e) => {
                failed += 1;
                let _ = p.err(&format!("error: {}: {e}\n", member.rel));
                continue;
            }
        };
        let wanted = keys.keys();
        if sealed.recipients == wanted && !force {
            current += 1;
            continue;
        }
        let plain = match ops::decrypt(&member.rel, &sealed.armor, Some(&ring)) {
            Ok((plain, _)) => plain,
            Err(e) => {
                failed += 1;
                let _ = p.err(&format!("error: {e}\n  fix: {}\n", e.fix()));
                continue;
            }
        };
        match ops::seal(format, &plain, keys, Some(&text), Some(&ring), force) {
            Ok(s) if s.text == text => current += 1,
            Ok(s) => {
                write_in_place(&member.abs, &s.text)?;
                changed += 1;
                let added = wanted
                    .iter()
                    .filter(|k| !sealed.recipients.contains(k))
                    .count();
                let removed = sealed
                    .recipients
                    .iter()
                    .filter(|k| !wanted.contains(k))
                    .count();
                report.push_str(&format!(
                    "rekeyed    {}  {} recipient(s) (+{added} −{removed})\n",
                    member.rel,
                    wanted.len()
                ));
                removed_any |= removed > 0;
                for k in sealed.recipients.iter().filter(|k| !wanted.contains(k)) {
                    report.push_str(&format!("             removed {}\n", short(k)));
                }
            }
            Err(e) => {
                failed += 1;
                let _ = p.err(&format!("error: {}: cannot re-encrypt: {e}\n", member.rel));
            }
        }
    }
    report.push_str(&format!(
        "{changed} re-encrypted, {current} already current, {failed} failed\n"
    ));
    if removed_any {
        report.push_str("note: removed recipients can still read older versions in git history; rotate what they could see\n");
    }
    super::io_result(p.out(&report))?;
    Ok(if failed > 0 { Exit::Invalid } else { Exit::Ok })
}
