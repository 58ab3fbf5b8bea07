//! Where the view's secrets live and where its output may go: the redaction key of
//! `mode: hash`, and the rule that decrypted private content stays out of the work tree.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::git::Git;
use crate::manifest::Manifest;
use crate::resolve::redact::{HashKey, HashKeyError};

/// Why the repository's redaction key is unusable. Content that a hash rule
/// covers is withheld until it is fixed; the hint says how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum KeyFileError {
    #[error(
        "`extensions.{REDACTION_EXTENSION}.hash_key` must be a file path inside the repository"
    )]
    NotAPath,
    #[error(
        "`extensions.{REDACTION_EXTENSION}.hash_key` `{0}` is not a path inside the repository"
    )]
    Outside(String),
    #[error("{0} does not exist")]
    #[diagnostic(help(
        "run `ctx redaction-key` to create it, and commit it so every clone hashes alike"
    ))]
    Missing(String),
    #[error("{rel}: {why}")]
    Unreadable { rel: String, why: String },
    #[error("{rel}: {source}")]
    Malformed { rel: String, source: HashKeyError },
    #[error("{0} already exists; a new key would change every hashed value")]
    #[diagnostic(help("delete it first if that is what you want"))]
    Exists(String),
    #[error(transparent)]
    Generate(HashKeyError),
}

/// Where the redaction key lives when the manifest does not say.
pub const DEFAULT_KEY_FILE: &str = ".ctx/redaction.key";
/// The manifest extension that can point elsewhere: `ctx.redaction: {hash_key: <file>}`.
pub const REDACTION_EXTENSION: &str = "ctx.redaction";

/// The redaction key file (relative to the manifest folder, `/`-separated), or why
/// the manifest's setting is unusable.
pub fn key_file(m: &Manifest) -> std::result::Result<String, KeyFileError> {
    let declared = m
        .extension(REDACTION_EXTENSION)
        .and_then(|x| x.get("hash_key"));
    let rel = match declared {
        None => DEFAULT_KEY_FILE.to_string(),
        Some(Value::String(s)) => s.trim_start_matches("./").to_string(),
        Some(_) => return Err(KeyFileError::NotAPath),
    };
    if rel.is_empty() || !crate::fs::confine::lexically_inside(Path::new(&rel)) {
        return Err(KeyFileError::Outside(rel));
    }
    Ok(rel)
}

/// Read the repository's redaction key. The error says how to create or fix it.
pub fn load_hash_key(m: &Manifest) -> std::result::Result<HashKey, KeyFileError> {
    let rel = key_file(m)?;
    let path = m.root.join(&rel);
    match std::fs::read_to_string(&path) {
        Ok(text) => HashKey::parse(&text).map_err(|source| KeyFileError::Malformed { rel, source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(KeyFileError::Missing(rel)),
        Err(e) => Err(KeyFileError::Unreadable {
            rel,
            why: e.to_string(),
        }),
    }
}

/// Create the redaction key file; never replaces an existing one. Returns its path.
pub fn create_hash_key(m: &Manifest) -> Result<PathBuf> {
    let rel = key_file(m)?;
    let path = m.root.join(&rel);
    if path.exists() {
        return Err(KeyFileError::Exists(rel).into());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    let text = HashKey::generate().map_err(KeyFileError::Generate)?;
    // A key: owner-only on disk, like every other secret ctx writes.
    crate::fs::write_atomic(
        &path,
        text.as_bytes(),
        crate::fs::Mode::Private,
        crate::fs::Existing::Refuse,
    )
    .map_err(|e| Error::io(&path, &e))?;
    Ok(path)
}

/// Does a local `content_uri` name the redaction key? (It is never served as content.)
pub fn names_key_file(m: &Manifest, uri: &str) -> bool {
    let Ok(rel) = key_file(m) else {
        return false;
    };
    match crate::adapters::scheme(uri) {
        None | Some("file") => {}
        _ => return false,
    }
    let path = crate::adapters::file::local_path(uri);
    let target = m.root.join(path.trim_start_matches("./"));
    let key = m.root.join(&rel);
    match (target.canonicalize(), key.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => Path::new(path.trim_start_matches("./")) == Path::new(&rel),
    }
}

/// May a file holding decrypted private content be written at `target`?
///
/// Outside the repository folder: yes. Inside it: only with `allow_in_tree`, never
/// over a file git tracks, and (when `keep_out_of_git`, i.e. the file is about to be
/// written) the file is kept out of git through the repository's local exclude list
/// (`.git/info/exclude`, which is never committed).
pub fn check_private_output(
    m: &Manifest,
    target: &Path,
    allow_in_tree: bool,
    keep_out_of_git: bool,
) -> Result<()> {
    let Some(rel) = inside(&m.root, target) else {
        return Ok(());
    };
    let shown = if rel.is_empty() {
        ".".to_string()
    } else {
        rel.clone()
    };
    if !allow_in_tree {
        return Err(Error::Invalid(format!(
            "refusing to write {shown}: the output holds decrypted private content, and private \
             plaintext never goes into the work tree by default. Write it outside the repository, \
             or pass --allow-private-output to write it there (it is then kept out of git)"
        )));
    }
    let Some(git) = Git::discover(&m.root) else {
        return Ok(());
    };
    let top_rel = match target_rel_to(&git.top, target) {
        Some(r) => r,
        None => return Ok(()),
    };
    if git
        .run(&["ls-files", "--error-unmatch", "--", &top_rel])
        .is_ok()
    {
        return Err(Error::Invalid(format!(
            "refusing to write {shown}: git tracks it, and decrypted private content must never be \
             committed. Write it somewhere git does not track"
        )));
    }
    if !keep_out_of_git || git.run(&["check-ignore", "-q", "--", &top_rel]).is_ok() {
        return Ok(());
    }
    let exclude = git
        .run(&["rev-parse", "--git-path", "info/exclude"])
        .map_err(|e| Error::Invalid(format!("cannot find git's exclude file: {}", e.message)))?;
    let exclude = PathBuf::from(String::from_utf8_lossy(&exclude).trim());
    let exclude = if exclude.is_absolute() {
        exclude
    } else {
        m.root.join(exclude)
    };
    if let Some(dir) = exclude.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, &e))?;
    }
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "# decrypted private content written by ctx\n/{}\n",
        escape_glob(&top_rel)
    ));
    crate::fs::write_atomic(
        &exclude,
        text.as_bytes(),
        crate::fs::Mode::Preserve,
        crate::fs::Existing::Replace,
    )
    .map_err(|e| Error::io(&exclude, &e))
}

/// `target` relative to `root` when it lies inside it (`""` for the root itself).
fn inside(root: &Path, target: &Path) -> Option<String> {
    target_rel_to(root, target)
}

fn target_rel_to(root: &Path, target: &Path) -> Option<String> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    // The target may not exist yet: canonicalise its nearest existing ancestor.
    let mut existing = target.to_path_buf();
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(n), Some(p)) => {
                tail.push(n.to_os_string());
                existing = p.to_path_buf();
            }
            _ => break,
        }
    }
    let mut real = existing.canonicalize().ok()?;
    for n in tail.into_iter().rev() {
        real.push(n);
    }
    let rel = real.strip_prefix(&root).ok()?;
    Some(rel.to_string_lossy().replace('\\', "/"))
}

fn escape_glob(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for c in rel.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '!' | '#' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
