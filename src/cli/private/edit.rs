//! `ctx private edit`: decrypt into a private temporary file (memory-backed when
//! possible, mode 0700 folder / 0600 file, never inside the repository), run the
//! editor, check the result, encrypt it back, and wipe the temporary file.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use zeroize::Zeroizing;

use ctx_core::diag::{Code, Severity};
use ctx_core::error::{Error, Exit, Result};
use ctx_core::load::parse::{self, Defaults};
use ctx_core::load::walk::{Member, MemberSource};
use ctx_core::object::Format;
use ctx_core::private::config::CollectionKeys;
use ctx_core::private::{format, ops};

use super::{format_of, keyring, write_in_place, IdentityArgs, Scope};
use crate::cli::{Global, Printer};

pub fn run(g: &Global, p: &Printer, path: &Path, ida: &IdentityArgs) -> Result<Exit> {
    let scope = Scope::load(g)?;
    if scope.report_config(p) {
        return Ok(Exit::Invalid);
    }
    let rel = scope.rel(g, path)?;
    let format = format_of(&rel)?;
    let (member, keys) = member_for(&scope, &rel)?;
    let ring = keyring(p, ida)?;
    let existing = match std::fs::read_to_string(&member.abs) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(&member.abs, &e)),
    };
    let original: Zeroizing<String> = match &existing {
        None => Zeroizing::new(template(format, &member)),
        Some(text) => match format::parse_sealed(format, text) {
            Ok(Some(s)) => {
                ops::decrypt(&rel, &s.armor, ring.as_ref())
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
    let (dir, memory) = private_dir(&scope.m.root)?;
    if !memory {
        let _ = p.err(&format!(
            "warning: no memory-backed folder ($XDG_RUNTIME_DIR or /dev/shm); the plaintext is kept in {} while you edit\n",
            dir.path().display()
        ));
    }
    let name = Path::new(&rel)
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "private.md".into());
    let tmp = dir.path().join(name);
    let result = edit_loop(p, &scope, &member, format, &original, &tmp);
    wipe(&tmp);
    drop(dir);
    let Some(edited) = result? else {
        return Ok(Exit::Invalid);
    };
    if edited.as_str() == original.as_str() {
        let what = if existing.is_some() {
            "left as it was"
        } else {
            "not created"
        };
        let _ = p.err(&format!("no changes: {rel} {what}\n"));
        return Ok(Exit::Ok);
    }
    let sealing = ops::seal(
        format,
        &edited,
        keys,
        existing.as_deref(),
        ring.as_ref(),
        false,
    )
    .map_err(|e| Error::Invalid(format!("{rel}: {e}")))?;
    if existing.as_deref() == Some(sealing.text.as_str()) {
        let _ = p.err(&format!("no changes: {rel} left as it was\n"));
        return Ok(Exit::Ok);
    }
    if let Some(parent) = member.abs.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
    }
    write_in_place(&member.abs, &sealing.text)?;
    let _ = p.err(&format!(
        "saved {rel} (encrypted to {} recipient(s))\n",
        keys.recipients.len()
    ));
    Ok(Exit::Ok)
}

/// Run the editor until the result is a valid object, or the user gives up.
/// Returns None when nothing is to be saved.
fn edit_loop(
    p: &Printer,
    scope: &Scope,
    member: &Member,
    format: Format,
    original: &str,
    tmp: &Path,
) -> Result<Option<Zeroizing<String>>> {
    write_private(tmp, original.as_bytes()).map_err(|e| Error::io(tmp, &e))?;
    loop {
        run_editor(tmp)?;
        let edited = Zeroizing::new(std::fs::read_to_string(tmp).map_err(|e| Error::io(tmp, &e))?);
        let problems = check(scope, member, format, &edited);
        if problems.is_empty() {
            return Ok(Some(edited));
        }
        let _ = p.err(&format!(
            "{}: the edited document is not valid:\n{problems}",
            member.rel
        ));
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            let _ = p.err("not saved: the file was left as it was\n");
            return Ok(None);
        }
        let _ = p.err("Edit again? [Y/n] ");
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        if answer.trim().to_ascii_lowercase().starts_with('n') {
            let _ = p.err("not saved: the file was left as it was\n");
            return Ok(None);
        }
    }
}

/// Errors in an edited plaintext, one per line (empty when it is acceptable).
fn check(scope: &Scope, member: &Member, format: Format, text: &str) -> String {
    if let Err(e) = ops::check_plaintext(format, text) {
        return format!("  {e}\n");
    }
    let collection = match &member.source {
        MemberSource::Collection { name, .. } => scope
            .m
            .collections
            .iter()
            .find(|c| &c.name == name)
            .map(|c| &c.defaults),
        MemberSource::Entry { .. } => None,
    };
    let defaults = Defaults {
        collection,
        manifest: &scope.m.defaults,
    };
    let parsed = parse::parse(member, text.as_bytes(), &defaults);
    let mut out = String::new();
    for d in parsed
        .diags
        .iter()
        // Credentials are what a private collection may hold: they get encrypted.
        .filter(|d| d.severity == Severity::Error && d.code != Code::SecretDetected)
    {
        out.push_str(&format!("  line {}: {}", d.line.unwrap_or(1), d.message));
        if let Some(f) = &d.field {
            out.push_str(&format!(" (field `{f}`)"));
        }
        if let Some(fix) = &d.remediation {
            out.push_str(&format!("\n    fix: {fix}"));
        }
        out.push('\n');
    }
    if parsed.object.is_none() && out.is_empty() {
        out.push_str("  the document does not describe an object\n");
    }
    out
}

/// The member (existing or new) at `rel`, and its private collection.
fn member_for<'a>(scope: &'a Scope, rel: &str) -> Result<(Member, &'a CollectionKeys)> {
    if let Some(m) = scope.members.iter().find(|m| m.rel == rel) {
        return match scope.keys_of(m) {
            Some(k) => Ok((m.clone(), k)),
            None => Err(not_private(scope, rel)),
        };
    }
    let path = ctx_core::fs::RelPath::parse(rel).map_err(|e| Error::Usage(e.to_string()))?;
    if let Some((name, base)) = scope.m.members.collection_of(&path) {
        if let Some(keys) = scope.cfg.collection(name) {
            let member = Member {
                abs: path.to_path(&scope.m.root),
                rel: path.clone(),
                source: MemberSource::Collection {
                    name: name.to_string(),
                    base: base.into(),
                },
            };
            return Ok((member, keys));
        }
    }
    Err(not_private(scope, rel))
}

fn not_private(scope: &Scope, rel: &str) -> Error {
    Error::Usage(format!(
        "{rel} is not in a private collection (private collections: {})",
        scope
            .cfg
            .collections
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// A starting document for a new private file.
fn template(format: Format, member: &Member) -> String {
    let id = match &member.source {
        MemberSource::Collection { name, base } => parse::derive_id(name, base, &member.rel),
        MemberSource::Entry { key } => key.clone(),
    };
    match format {
        Format::Markdown => format!("---\nid: {id}\ntype: note\n---\n\n"),
        Format::Yaml => format!("id: {id}\ntype: note\ncontent: \"\"\n"),
        Format::Json => {
            format!("{{\n  \"id\": \"{id}\",\n  \"type\": \"note\",\n  \"content\": \"\"\n}}\n")
        }
    }
}

/// A fresh 0700 folder for the plaintext: `$XDG_RUNTIME_DIR` or `/dev/shm` when they
/// exist (memory-backed), else the system temporary folder; never inside `repo`.
fn private_dir(repo: &Path) -> Result<(tempfile::TempDir, bool)> {
    let mut candidates: Vec<(PathBuf, bool)> = Vec::new();
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        candidates.push((x, true));
    }
    candidates.push((PathBuf::from("/dev/shm"), true));
    candidates.push((std::env::temp_dir(), false));
    for (base, memory) in candidates {
        let Ok(real) = base.canonicalize() else {
            continue;
        };
        if !real.is_absolute() || !real.is_dir() || real.starts_with(repo) {
            continue;
        }
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("ctx-edit-")
            .tempdir_in(&real)
        {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                    .map_err(|e| Error::io(dir.path(), &e))?;
            }
            return Ok((dir, memory));
        }
    }
    Err(Error::Invalid(
        "no private temporary folder outside the repository is available for editing".into(),
    ))
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    ctx_core::fs::create_new(path, bytes, ctx_core::fs::Mode::Private)
}

/// Overwrite the plaintext before removing it (best effort; the folder goes too).
fn wipe(path: &Path) {
    if let Ok(meta) = std::fs::metadata(path) {
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(path) {
            let _ = f.write_all(&vec![0u8; meta.len() as usize]);
            let _ = f.sync_all();
        }
        let _ = std::fs::remove_file(path);
    }
}

/// `$VISUAL`, `$EDITOR` or `vi`, run through the shell like git does (so
/// `EDITOR="code --wait"` works). Interrupts reach the editor; ctx survives them
/// so that it can still remove the plaintext.
fn run_editor(file: &Path) -> Result<()> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|e| !e.trim().is_empty())
        })
        .unwrap_or_else(|| "vi".into());
    let caught = Arc::new(AtomicBool::new(false));
    let ids: Vec<_> = [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGQUIT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ]
    .iter()
    .filter_map(|s| signal_hook::flag::register(*s, Arc::clone(&caught)).ok())
    .collect();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(&editor)
        .arg(file)
        .status();
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    let status =
        status.map_err(|e| Error::Invalid(format!("cannot run the editor `{editor}`: {e}")))?;
    if !status.success() {
        return Err(Error::Invalid(format!(
            "the editor `{editor}` exited with {status}; nothing was saved"
        )));
    }
    Ok(())
}
