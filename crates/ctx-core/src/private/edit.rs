//! An edit session of one private file: decrypt it (or start a new file
//! from a template) into a private plaintext folder ([`super::scratch`]),
//! let the front end run an editor on [`Session::file`], check what comes
//! back, and encrypt it into the repository. The folder is wiped when the
//! session ends, however it ends short of SIGKILL.

use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

use crate::diag::{Code, Severity};
use crate::error::{Error, Result};
use crate::evidence::{Record, WriteKind};
use crate::load::parse::{self, Defaults};
use crate::load::walk::{Member, MemberSource};
use crate::object::Format;

use super::config::CollectionKeys;
use super::format::{self, content_free};
use super::identity::Keyring;
use super::ops;
use super::scope::{format_of, require_identity, Scope};
use super::scratch::PlaintextDir;

/// One open edit. Dropping it wipes the plaintext.
#[derive(Debug)]
pub struct Session<'a> {
    scope: &'a Scope,
    /// The file, relative to the repository.
    pub rel: String,
    member: Member,
    keys: &'a CollectionKeys,
    format: Format,
    existing: Option<String>,
    original: Zeroizing<String>,
    file: PathBuf,
    dir: PlaintextDir,
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Nothing changed; `existed` tells whether the file was there before.
    Unchanged { existed: bool },
    /// Encrypted and written.
    Written {
        recipients: usize,
        id: String,
        decision: bool,
    },
}

/// Open `path` (relative to `cwd`) for editing. An existing encrypted file
/// needs an identity (none is a usage error); a new path inside a private
/// collection starts from a template.
pub fn open<'a>(
    scope: &'a Scope,
    cwd: &Path,
    path: &Path,
    ring: Option<&Keyring>,
) -> Result<Session<'a>> {
    let rel = scope.rel(cwd, path)?;
    let format = format_of(&rel)?;
    let (member, keys) = scope.member_for(&rel)?;
    let existing = match std::fs::read_to_string(&member.abs) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(&member.abs, &e)),
    };
    let original: Zeroizing<String> = match &existing {
        None => Zeroizing::new(template(format, &member)),
        Some(text) => match format::parse_sealed(format, text) {
            Ok(Some(s)) => {
                if ring.is_none() {
                    require_identity(None, &format!("{rel} is encrypted"))?;
                }
                ops::decrypt(&rel, &s.armor, ring)
                    .map_err(|e| Error::Invalid(format!("{e}\n  fix: {}", e.fix())))?
                    .0
            }
            Ok(None) => {
                return Err(Error::Invalid(format!(
                    "{rel} holds plaintext: encrypt it first with `ctx private encrypt {rel}`, then edit it"
                )))
            }
            Err(e) => return Err(Error::Invalid(format!("{rel}: {e}"))),
        },
    };
    let dir = PlaintextDir::create(&scope.m.root)?;
    let name = Path::new(&rel)
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "private.md".into());
    let file = dir.write_new(&name, original.as_bytes())?;
    Ok(Session {
        scope,
        rel,
        member,
        keys,
        format,
        existing,
        original,
        file,
        dir,
    })
}

impl Session<'_> {
    /// The plaintext file the editor works on.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Is the plaintext folder memory-backed? (Else the front end warns.)
    pub fn memory_backed(&self) -> bool {
        self.dir.memory_backed()
    }

    pub fn folder(&self) -> &Path {
        self.dir.path()
    }

    /// The edited plaintext.
    pub fn read_back(&self) -> Result<Zeroizing<String>> {
        std::fs::read_to_string(&self.file)
            .map(Zeroizing::new)
            .map_err(|e| Error::io(&self.file, &e))
    }

    /// Why `text` cannot be saved, one line each (empty when it can). Lines
    /// and fields are named; values never are.
    pub fn problems(&self, text: &str) -> Vec<String> {
        if let Err(e) = ops::check_plaintext(self.format, text) {
            return vec![e.to_string()];
        }
        let collection = match &self.member.source {
            MemberSource::Collection { name, .. } => self
                .scope
                .m
                .collections
                .iter()
                .find(|c| c.name.as_str() == &**name)
                .map(|c| &c.defaults),
            MemberSource::Entry { .. } => None,
        };
        let defaults = Defaults {
            collection,
            manifest: &self.scope.m.defaults,
        };
        let parsed = parse::parse(&self.member, text.as_bytes(), &defaults);
        let mut out: Vec<String> = parsed
            .diags
            .iter()
            // Credentials are what a private collection may hold: they get encrypted.
            .filter(|d| d.severity == Severity::Error && d.code != Code::SecretDetected)
            .map(|d| {
                let mut s = format!("line {}: {}", d.line.unwrap_or(1), content_free(&d.message));
                if let Some(f) = &d.field {
                    s.push_str(&format!(" (field `{f}`)"));
                }
                if let Some(fix) = &d.remediation {
                    s.push_str(&format!("\n    fix: {}", content_free(fix)));
                }
                s
            })
            .collect();
        if parsed.object.is_none() && out.is_empty() {
            out.push("the document does not describe an object".into());
        }
        out
    }

    /// Encrypt `edited` into the repository (byte-identical when nothing
    /// changed). `ring` lets an unchanged file keep its ciphertext. A write
    /// is recorded when the manifest's `audit` block asks; the log is
    /// checked before the file is written.
    pub fn save(self, edited: &str, ring: Option<&Keyring>) -> Result<Saved> {
        let existed = self.existing.is_some();
        if edited == self.original.as_str() {
            return Ok(Saved::Unchanged { existed });
        }
        let sealing = ops::seal(
            self.format,
            edited,
            self.keys,
            self.existing.as_deref(),
            ring,
            false,
        )
        .map_err(|e| Error::Invalid(format!("{}: {e}", self.rel)))?;
        if self.existing.as_deref() == Some(sealing.text.as_str()) {
            return Ok(Saved::Unchanged { existed });
        }
        let doc = format::parse_plain(self.format, edited).ok();
        let field = |k: &str| {
            doc.as_ref()
                .and_then(|d| d.fields.get(k))
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        };
        let id = field("id").unwrap_or_else(|| template_id(&self.member));
        let decision = field("type").as_deref() == Some("decision");
        let record = Record::write(None, &[], WriteKind::Write, [(id.clone(), decision)]);
        // The editor session ran unlocked; the save takes the lock and replaces
        // the file only while it still holds what the session opened.
        let root = &self.scope.m.root;
        let _lock = crate::fs::RepoLock::acquire(root).map_err(|e| Error::io(root, &e))?;
        let path = &self.member.abs;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
        }
        let new = sealing.text.as_bytes();
        let mode = crate::fs::Mode::Preserve;
        crate::evidence::record_transaction(&self.scope.m, Some(record), |txn| {
            match self.existing.as_deref() {
                Some(old) => txn.replace(path, old.as_bytes(), new, mode),
                None => txn.create(path, new, mode),
            }
            .map_err(|e| crate::evidence::record::txn_error(root, e))
        })?;
        Ok(Saved::Written {
            recipients: self.keys.recipients.len(),
            id,
            decision,
        })
    }
}

fn template_id(member: &Member) -> String {
    match &member.source {
        MemberSource::Collection { name, base } => parse::derive_id(name, base, &member.rel),
        MemberSource::Entry { key } => key.clone(),
    }
}

/// A starting document for a new private file.
fn template(format: Format, member: &Member) -> String {
    let id = template_id(member);
    match format {
        Format::Markdown => format!("---\nid: {id}\ntype: note\n---\n\n"),
        Format::Yaml => format!("id: {id}\ntype: note\ncontent: \"\"\n"),
        Format::Json => {
            format!("{{\n  \"id\": \"{id}\",\n  \"type\": \"note\",\n  \"content\": \"\"\n}}\n")
        }
    }
}
