//! What `ctx export` does with the files it renders: the command line their
//! marker records, whether to write, refuse or report each stale (`--check`),
//! whether a host reads it where it goes, and which generated files a
//! `--per-folder` export no longer writes.

use std::path::{Path, PathBuf};

use super::placement::{self, Misplaced, Place, Tree, INSTRUCTION_FILES};
use super::{scan, State, Target};
use crate::error::{Error, Result};
use crate::fs::RelPath;
use crate::manifest::Manifest;

/// How export was asked for, as recorded in the file's marker so that running
/// that command line regenerates the file.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    pub target: Target,
    pub agent: Option<&'a str>,
    pub roles: &'a [String],
    pub task: Option<&'a str>,
    pub include: &'a [String],
    pub output: Option<&'a Path>,
    /// `--per-folder`: one file per folder of `extensions.ctx.export.folders`.
    pub per_folder: bool,
    pub allow_private_output: bool,
    pub allow_findings: bool,
    /// `--allow-classification`: the ceiling raised above the target's.
    pub allow_classification: Option<crate::model::Classification>,
}

/// The command line that regenerates the file, each value quoted for a POSIX shell.
pub fn command_line(i: &Invocation<'_>) -> String {
    // A command-line argument cannot hold NUL, the one thing shlex refuses.
    let quote =
        |s: &str| shlex::try_quote(s).map_or_else(|_| s.replace('\0', ""), |q| q.into_owned());
    let mut c = format!("ctx export --target {}", i.target.name());
    if let Some(x) = i.agent {
        c.push_str(&format!(" --agent {}", quote(x)));
    }
    for r in i.roles {
        c.push_str(&format!(" --role {}", quote(r)));
    }
    if let Some(t) = i.task {
        c.push_str(&format!(" --task {}", quote(t)));
    }
    for x in i.include {
        c.push_str(&format!(" --include {}", quote(x)));
    }
    if let Some(o) = i.output {
        c.push_str(&format!(" --output {}", quote(&o.to_string_lossy())));
    }
    if i.per_folder {
        c.push_str(" --per-folder");
    }
    if i.allow_private_output {
        c.push_str(" --allow-private-output");
    }
    if i.allow_findings {
        c.push_str(" --allow-findings");
    }
    if let Some(l) = i.allow_classification {
        c.push_str(&format!(" --allow-classification {l}"));
    }
    c
}

/// What to do with the file, given its [`State`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Already what export would write: nothing to do.
    UpToDate,
    /// Write (or replace) it.
    Write,
    /// A file ctx did not generate, and no `force`: refuse.
    RefuseForeign,
    /// `--check` failed: the file is missing, foreign or stale (as the state says).
    CheckFailed(State),
}

/// Decide from the file's state, `--check` and `--force`.
pub fn verdict(state: State, check: bool, force: bool) -> Verdict {
    match (state, check) {
        (State::Current, _) => Verdict::UpToDate,
        (State::Foreign, false) if !force => Verdict::RefuseForeign,
        (_, false) => Verdict::Write,
        (state, true) => Verdict::CheckFailed(state),
    }
}

/// How the file at `path` compares with `text` ([`super::state`]), read line by line:
/// the existing file is never held whole.
pub fn existing_state(path: &Path, text: &str, digest: &str) -> Result<State> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::Missing),
        Err(e) => return Err(Error::io(path, &e)),
    };
    let mut lines = Lines {
        reader: std::io::BufReader::new(file),
        failed: None,
    };
    let state = super::state_of_lines(&mut lines, text, digest);
    match lines.failed {
        Some(e) => Err(Error::io(path, &e)),
        None => Ok(state),
    }
}

/// A reader's lines, each with its `\n` (invalid UTF-8 replaced); a read error ends
/// them and is kept in `failed`.
struct Lines<R> {
    reader: R,
    failed: Option<std::io::Error>,
}

impl<R: std::io::BufRead> Iterator for Lines<R> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        let mut line = Vec::new();
        match self.reader.read_until(b'\n', &mut line) {
            Ok(0) => None,
            Ok(_) => Some(
                String::from_utf8(line)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }
}

/// The manifest entry or collection that would load a file written at `path` as
/// a context object (an agent file must never become one).
pub fn loaded_as_object(m: &Manifest, cwd: &Path, path: &Path) -> Option<String> {
    let rel = crate::fs::confine::rel_in_root(&m.root, cwd, path)?;
    if let Some(entry) = m.members.entry_of(&rel) {
        return Some(format!("the `context:` entry `{entry}`"));
    }
    m.members
        .collection_of(&rel)
        .map(|(name, _)| format!("collection `{name}`"))
}

/// Will `target`'s host read the file about to be written at `path` with `text`?
pub fn placement(
    m: &Manifest,
    cwd: &Path,
    target: Target,
    path: &Path,
    text: &str,
) -> Option<Misplaced> {
    let Some(rel) = crate::fs::confine::rel_in_root(&m.root, cwd, path) else {
        return Some(Misplaced {
            reason: format!(
                "`{}` is outside the repository, where {} never reads it as this project's instructions",
                path.display(),
                target.host()
            ),
            fix: format!(
                "export without -o to write `{}` in the repository",
                target.default_path()
            ),
        });
    };
    let below = scan::below_git_root(&m.root);
    let place = Place {
        rel: rel.as_str(),
        below_git_root: below.as_deref(),
    };
    let disk = Disk {
        root: &m.root,
        file: &rel,
    };
    placement::check(target, place, text, text.chars().count(), &disk)
}

/// The file system around one file about to be written: its folder's entries
/// (globs are left to `ctx validate`, which walks the whole tree once).
struct Disk<'a> {
    root: &'a Path,
    file: &'a RelPath,
}

impl Tree for Disk<'_> {
    fn has_work_under(&self, dir: &str) -> bool {
        let Ok(entries) = std::fs::read_dir(self.root.join(dir)) else {
            return false;
        };
        let own = self.file.rsplit('/').next().unwrap_or("");
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !INSTRUCTION_FILES.contains(&name.as_ref()) && name != own
        })
    }

    fn matches_any(&self, _: &[String]) -> Option<bool> {
        None
    }
}

/// Generated files of `target` whose marker records `command` and that this run
/// does not write: what is left of folders since removed from the map.
pub fn leftovers(
    m: &Manifest,
    cwd: &Path,
    target: Target,
    command: &str,
    written: &[PathBuf],
) -> Vec<RelPath> {
    let written: Vec<RelPath> = written
        .iter()
        .filter_map(|p| crate::fs::confine::rel_in_root(&m.root, cwd, p))
        .collect();
    scan::scan(m, &Default::default())
        .generated
        .into_iter()
        .filter(|g| g.target == Some(target) && g.command.as_deref() == Some(command))
        .filter(|g| !written.contains(&g.rel))
        .map(|g| g.rel)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_quotes_every_value() {
        let roles = ["support".to_string(), "it's".to_string()];
        let include = ["policies.*".to_string()];
        let line = command_line(&Invocation {
            target: Target::ClaudeMd,
            agent: None,
            roles: &roles,
            task: Some("refund request"),
            include: &include,
            output: Some(Path::new("out dir/CLAUDE.md")),
            per_folder: false,
            allow_private_output: true,
            allow_findings: false,
            allow_classification: None,
        });
        assert_eq!(
            line,
            "ctx export --target claude-md --role support --role \"it's\" --task 'refund request' \
             --include 'policies.*' --output 'out dir/CLAUDE.md' --allow-private-output"
        );
    }

    #[test]
    fn verdicts() {
        assert_eq!(verdict(State::Current, true, false), Verdict::UpToDate);
        assert_eq!(verdict(State::Current, false, false), Verdict::UpToDate);
        assert_eq!(
            verdict(State::Foreign, false, false),
            Verdict::RefuseForeign
        );
        assert_eq!(verdict(State::Foreign, false, true), Verdict::Write);
        assert_eq!(verdict(State::Missing, false, false), Verdict::Write);
        assert_eq!(verdict(State::Stale(None), false, false), Verdict::Write);
        assert_eq!(
            verdict(State::Missing, true, false),
            Verdict::CheckFailed(State::Missing)
        );
        assert_eq!(
            verdict(State::Foreign, true, true),
            Verdict::CheckFailed(State::Foreign)
        );
    }

    #[test]
    fn existing_files_are_compared_line_by_line_or_absent() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("AGENTS.md");
        let marker = format!(
            "{} (agents-md) bundle digest sha256:ab -->\n",
            super::super::MARKER
        );
        let text = format!("{marker}# A\nb\n");
        let state = |p: &Path| existing_state(p, &text, "sha256:ab").unwrap();
        assert_eq!(state(&p), State::Missing);
        std::fs::write(&p, &text).unwrap();
        assert_eq!(state(&p), State::Current);
        std::fs::write(&p, format!("{marker}# A\nb")).unwrap();
        assert_eq!(state(&p), State::Stale(Some("sha256:ab".into())));
        // Bytes that are not UTF-8 are replaced, never refused (the file is then stale).
        std::fs::write(&p, [marker.as_bytes(), b"# A\n\xffb\n"].concat()).unwrap();
        assert_eq!(state(&p), State::Stale(Some("sha256:ab".into())));
        std::fs::write(&p, "x").unwrap();
        assert_eq!(state(&p), State::Foreign);
        // A folder where the file should be is an error naming it, not "missing".
        let err = existing_state(tmp.path(), &text, "sha256:ab").unwrap_err();
        assert!(
            err.to_string().contains(&tmp.path().display().to_string()),
            "{err}"
        );
    }
}
