//! `ctx init`: plan and write a new repository that passes `validate --strict`,
//! optionally a CI workflow and git set-up. Existing files are kept unless `force`;
//! every write is atomic. The front end asks the questions and renders the steps.

mod template;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fs::{Existing, Mode};

pub use template::template;

/// The names a manifest may have, in the order `ctx` looks for them.
pub const MANIFEST_NAMES: [&str; 3] = ["opencontext.yaml", "opencontext.yml", "opencontext.json"];

/// What `.gitignore` keeps out of git. Everything else ctx writes under `.ctx/`
/// belongs in git: `redaction.key` (every clone must hash alike), `receipts/` and
/// `bundles/` (evidence others verify), and the audit log with its head.
pub const GITIGNORE: &[&str] = &[
    "# ctx: per-machine state that must not be committed",
    "/.ctx/provider-state/",
];

/// The manifest already in `dir`, if any.
pub fn existing_manifest(dir: &Path) -> Option<&'static str> {
    MANIFEST_NAMES.into_iter().find(|m| dir.join(m).is_file())
}

/// A namespace id from a folder name: lowercase, dashes between words.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "context".into()
    } else {
        out
    }
}

/// A namespace id: lowercase letters, digits and dashes, not starting with a dash.
pub use crate::pattern::valid_namespace;

/// What `apply` writes.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// The repository folder (created if missing).
    pub dir: &'a Path,
    pub id: &'a str,
    /// The name as a YAML scalar (already quoted).
    pub name_yaml: &'a str,
    /// `YYYY-MM-DD`, the objects' `updated` day.
    pub today: &'a str,
    /// Write the template files (false when a repository is already there).
    pub template: bool,
    /// Replace existing files.
    pub force: bool,
    /// Write the GitHub Actions workflow pinned to this ctx version.
    pub github_ci: Option<&'a str>,
    /// `git init` (unless inside a work tree) and the `.gitignore` lines.
    pub git: bool,
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Replaced,
    Updated,
    /// It exists and `force` was not given.
    Kept,
}

/// One step `apply` took, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A template file, by its path relative to the repository folder.
    Template { rel: &'static str, outcome: Outcome },
    /// The CI workflow.
    Workflow { path: PathBuf, outcome: Outcome },
    /// `git init` ran.
    GitInit,
    /// `.gitignore` gained ctx's lines.
    GitIgnore { path: PathBuf, outcome: Outcome },
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
    }
    crate::fs::write_atomic(path, text.as_bytes(), Mode::Preserve, Existing::Replace)
        .map_err(|e| Error::io(path, &e))
}

/// Write `path` unless it exists and `force` is off.
fn put(path: &Path, text: &str, force: bool) -> Result<Outcome> {
    let exists = path.exists();
    if exists && !force {
        return Ok(Outcome::Kept);
    }
    write(path, text)?;
    Ok(if exists {
        Outcome::Replaced
    } else {
        Outcome::Created
    })
}

/// Write the repository's files and return what was done, in order.
pub fn apply(o: &Options<'_>) -> Result<Vec<Step>> {
    std::fs::create_dir_all(o.dir).map_err(|e| Error::io(o.dir, &e))?;
    let mut steps = Vec::new();
    if o.template {
        for (rel, text) in template(o.id, o.name_yaml, o.today) {
            let outcome = put(&o.dir.join(rel), &text, o.force)?;
            steps.push(Step::Template { rel, outcome });
        }
    }
    if let Some(version) = o.github_ci {
        let (path, text) = crate::ci::github_workflow_file(o.dir, version);
        let outcome = put(&path, &text, o.force)?;
        steps.push(Step::Workflow { path, outcome });
    }
    if o.git {
        steps.extend(git_setup(o.dir)?);
    }
    Ok(steps)
}

/// `git init` (unless already in a work tree) and the `.gitignore` lines ctx needs,
/// appended to an existing `.gitignore` without touching what is there.
fn git_setup(dir: &Path) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    if crate::git::Git::discover(dir).is_none() {
        let out = crate::git::command(dir, crate::git::Scope::Isolated)
            .args(["init", "-q"])
            .output()
            .map_err(|e| Error::Usage(format!("--git needs git installed: {e}")))?;
        if !out.status.success() {
            return Err(Error::Invalid(format!(
                "git init failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        steps.push(Step::GitInit);
    }
    let path = dir.join(".gitignore");
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(&path, &e)),
    };
    let missing: Vec<&str> = GITIGNORE
        .iter()
        .filter(|l| !old.lines().any(|x| x.trim() == **l))
        .copied()
        .collect();
    if !missing.is_empty() {
        let mut text = old.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&(missing.join("\n") + "\n"));
        write(&path, &text)?;
        let outcome = if old.is_empty() {
            Outcome::Created
        } else {
            Outcome::Updated
        };
        steps.push(Step::GitIgnore { path, outcome });
    }
    Ok(steps)
}
