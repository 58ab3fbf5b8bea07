//! What `ctx export` does with the file it renders: the command line its marker
//! records, whether to write, refuse or report it stale (`--check`), and the
//! write itself (atomic, after the bundle event is recorded).

use std::path::Path;

use serde_json::Value;

use super::{State, Target};
use crate::error::{Error, Result};
use crate::evidence::{BundleEvent, Record};
use crate::fs::{Existing, Mode};
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
    pub allow_private_output: bool,
    pub allow_findings: bool,
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
    if i.allow_private_output {
        c.push_str(" --allow-private-output");
    }
    if i.allow_findings {
        c.push_str(" --allow-findings");
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

/// The file's current text, if there is one.
pub fn read_existing(path: &Path) -> Result<Option<String>> {
    match std::fs::read(path) {
        // Valid UTF-8 (a file ctx wrote) is taken as is, never copied.
        Ok(b) => Ok(Some(String::from_utf8(b).unwrap_or_else(|e| {
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, &e)),
    }
}

/// Write the file atomically, recording the bundle it was rendered from first.
pub fn write(manifest: &Manifest, path: &Path, text: &str, bundle: &Value) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
    }
    crate::evidence::record_after(
        manifest,
        Some(Record::bundle(BundleEvent::Bundle, bundle)),
        || {
            crate::fs::write_atomic(path, text.as_bytes(), Mode::Preserve, Existing::Replace)
                .map_err(|e| Error::io(path, &e))
        },
    )
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
            allow_private_output: true,
            allow_findings: false,
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
    fn existing_files_are_read_or_absent() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("AGENTS.md");
        assert_eq!(read_existing(&p).unwrap(), None);
        std::fs::write(&p, "x").unwrap();
        assert_eq!(read_existing(&p).unwrap().as_deref(), Some("x"));
        // Bytes that are not UTF-8 are replaced, never refused (the file is compared, then
        // replaced or reported).
        std::fs::write(&p, b"a\xffb").unwrap();
        assert_eq!(read_existing(&p).unwrap().as_deref(), Some("a\u{fffd}b"));
    }
}
