//! Git, through the `git` binary with explicit arguments (never a shell).
//! Everything here is optional: without git, callers degrade (history still
//! shows declared versions) or fail with a clear message.

pub mod hook;
pub mod index;
pub mod revision;
pub mod staged;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A git work tree that contains the repository.
#[derive(Debug, Clone)]
pub struct Git {
    /// The folder git commands run in (the manifest folder).
    pub cwd: PathBuf,
    /// The work tree's top-level folder.
    pub top: PathBuf,
}

/// One commit touching a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub hash: String,
    /// Author date, `YYYY-MM-DD`.
    pub date: String,
    pub author: String,
    pub subject: String,
}

/// A failed git invocation, with git's own message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("git {args}: {message}")]
pub struct GitError {
    pub args: String,
    pub message: String,
}

/// Git variables that name paths: inside hooks they may be relative to the
/// hook's folder, which would break once we run git with `-C`.
const PATH_VARS: [&str; 4] = [
    "GIT_DIR",
    "GIT_INDEX_FILE",
    "GIT_WORK_TREE",
    "GIT_OBJECT_DIRECTORY",
];

/// Variables that point git at another repository, index or configuration. An
/// [`Scope::Isolated`] command drops them all, so it acts on the folder it is given.
const LOCATING_VARS: [&str; 11] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXEC_PATH",
];

/// Which repository a git command acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The repository ctx works on, as the environment names it: inside a
    /// pre-commit hook `GIT_DIR` and `GIT_INDEX_FILE` are honoured (made absolute,
    /// since git runs with `-C`).
    Repository,
    /// Whatever work tree holds the folder, found from the folder alone: variables
    /// that locate another repository or inject configuration are dropped, and
    /// system configuration and hooks are off. For checkouts ctx only reads
    /// (`adapters.git.repos`) and for folders outside the repository (key files).
    Isolated,
}

/// The one way ctx runs git: the binary (never a shell), in `dir`, with one
/// environment policy. Nothing is inherited from ctx's own standard streams: stdin
/// is closed and stdout/stderr are captured, so a child can never write into ctx's
/// output (a front end may be speaking a protocol on stdout). git never prompts,
/// never reaches the network and never runs fsmonitor.
pub fn command(dir: &Path, scope: Scope) -> Command {
    let mut c = Command::new("git");
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PROTOCOL_FROM_USER", "0");
    match scope {
        Scope::Repository => {
            // Paths are passed as paths: no `:(glob)`-style pathspec magic in a file
            // name. (Not for isolated commands: `check-ignore` refuses literal pathspecs.)
            c.env("GIT_LITERAL_PATHSPECS", "1");
            if let Ok(here) = std::env::current_dir() {
                for var in PATH_VARS {
                    if let Some(v) = std::env::var_os(var) {
                        let p = PathBuf::from(&v);
                        if p.is_relative() {
                            c.env(var, here.join(p));
                        }
                    }
                }
            }
        }
        Scope::Isolated => {
            for var in LOCATING_VARS {
                c.env_remove(var);
            }
            c.env("GIT_CONFIG_NOSYSTEM", "1");
        }
    }
    c.arg("-C")
        .arg(dir)
        .args(["-c", "protocol.allow=never", "-c", "core.fsmonitor=false"]);
    if scope == Scope::Isolated {
        c.args(["-c", "core.hooksPath=/dev/null"]);
    }
    c
}

fn base_command(cwd: &Path) -> Command {
    command(cwd, Scope::Repository)
}

/// Is a `git` binary on PATH?
pub fn available() -> bool {
    Command::new("git")
        .arg("--version")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Git {
    /// The work tree containing `dir`, or None (no git, or not inside a work tree).
    pub fn discover(dir: &Path) -> Option<Git> {
        let out = base_command(dir)
            .args(["rev-parse", "--show-toplevel"])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let top = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim_end());
        Some(Git {
            cwd: dir.to_path_buf(),
            top: top.canonicalize().unwrap_or(top),
        })
    }

    /// A command running in the manifest folder.
    pub fn command(&self) -> Command {
        base_command(&self.cwd)
    }

    /// Run git with `args`, returning stdout.
    pub fn run(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        self.run_with(self.command(), args, None)
    }

    /// Run a prepared command with `args`, feeding `input` on stdin.
    pub fn run_with(
        &self,
        mut cmd: Command,
        args: &[&str],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let fail = |message: String| GitError {
            args: args.join(" "),
            message,
        };
        let mut child = cmd.spawn().map_err(|e| fail(e.to_string()))?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            let bytes = bytes.to_vec();
            // Write from a thread so a large output cannot deadlock against our input.
            let writer = std::thread::spawn(move || stdin.write_all(&bytes));
            let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
            let _ = writer.join();
            return finish(out, fail);
        }
        let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
        finish(out, fail)
    }

    /// Where git keeps `name` (`rev-parse --git-path`: honours `core.hooksPath`,
    /// linked work trees and `GIT_DIR`), absolute.
    pub fn git_path(&self, name: &str) -> Result<PathBuf, GitError> {
        let out = self.run(&["rev-parse", "--git-path", name])?;
        let p = PathBuf::from(String::from_utf8_lossy(&out).trim_end());
        Ok(if p.is_absolute() { p } else { self.cwd.join(p) })
    }

    /// The manifest folder relative to the top-level (`""` when they coincide), `/`-separated.
    pub fn prefix(&self) -> String {
        let cwd = self.cwd.canonicalize().unwrap_or_else(|_| self.cwd.clone());
        crate::fs::RelPath::strip(&self.top, &cwd)
            .map(String::from)
            .unwrap_or_default()
    }

    /// Commits that touched any of `files` (relative to the manifest folder), newest first.
    pub fn log(&self, files: &[String]) -> Result<Vec<Commit>, GitError> {
        let mut args = vec![
            "log",
            "--no-color",
            "--date=short",
            "--format=%H%x1f%ad%x1f%an%x1f%s",
            "--",
        ];
        args.extend(files.iter().map(String::as_str));
        let out = self.run(&args)?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|l| {
                let mut p = l.split('\x1f');
                Some(Commit {
                    hash: p.next()?.to_string(),
                    date: p.next()?.to_string(),
                    author: p.next()?.to_string(),
                    subject: p.next().unwrap_or("").to_string(),
                })
            })
            .collect())
    }

    /// The full commit id `rev` names, or an error naming the revision.
    pub fn resolve_rev(&self, rev: &str) -> Result<String, GitError> {
        if rev.starts_with('-') {
            return Err(GitError {
                args: format!("rev-parse {rev}"),
                message: "a revision cannot start with `-`".into(),
            });
        }
        let spec = format!("{rev}^{{commit}}");
        let out = self.run(&["rev-parse", "--verify", "--quiet", &spec])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Write the files of commit `rev` under the manifest folder into `dest`
    /// (keeping paths relative to the top-level), through a throwaway index file
    /// `scratch_index` so the user's index and work tree are untouched.
    /// Returns the manifest folder inside `dest`.
    pub fn materialize_rev(
        &self,
        rev: &str,
        dest: &Path,
        scratch_index: &Path,
    ) -> Result<PathBuf, GitError> {
        self.run_with(self.at_top(Some(scratch_index)), &["read-tree", rev], None)?;
        self.checkout_index(Some(scratch_index), dest)?;
        Ok(dest.join(self.prefix()))
    }

    /// Write the index (the staged state) under the manifest folder into `dest`.
    /// Inside a pre-commit hook the index is whatever `GIT_INDEX_FILE` names.
    pub fn materialize_index(&self, dest: &Path) -> Result<PathBuf, GitError> {
        self.checkout_index(None, dest)?;
        Ok(dest.join(self.prefix()))
    }

    fn at_top(&self, index: Option<&Path>) -> Command {
        let mut c = base_command(&self.top);
        if let Some(i) = index {
            c.env("GIT_INDEX_FILE", i);
        }
        c
    }

    fn checkout_index(&self, index: Option<&Path>, dest: &Path) -> Result<(), GitError> {
        let prefix = self.prefix();
        let mut args = vec!["ls-files", "-z", "--"];
        if !prefix.is_empty() {
            args.push(prefix.as_str());
        }
        let paths = self.run_with(self.at_top(index), &args, None)?;
        let target = format!("--prefix={}/", dest.display());
        self.run_with(
            self.at_top(index),
            &["checkout-index", "--stdin", "-z", "-f", &target],
            Some(&paths),
        )?;
        Ok(())
    }

    /// Read blobs by object id with one `git cat-file --batch` process.
    pub fn blobs(&self, ids: &[String]) -> Result<HashMap<String, Vec<u8>>, GitError> {
        let mut out = HashMap::new();
        if ids.is_empty() {
            return Ok(out);
        }
        let mut input = Vec::new();
        for id in ids {
            input.extend_from_slice(id.as_bytes());
            input.push(b'\n');
        }
        let bytes = self.run_with(self.command(), &["cat-file", "--batch"], Some(&input))?;
        let mut r = &bytes[..];
        for _ in ids {
            let nl = r.iter().position(|b| *b == b'\n').unwrap_or(r.len());
            let header = String::from_utf8_lossy(&r[..nl]).into_owned();
            r = &r[(nl + 1).min(r.len())..];
            let mut parts = header.split(' ');
            let (Some(id), Some(_kind), Some(size)) = (parts.next(), parts.next(), parts.next())
            else {
                continue; // "<id> missing"
            };
            let size: usize = size.parse().unwrap_or(0).min(r.len());
            let mut body = Vec::with_capacity(size);
            let _ = (&r[..size]).read_to_end(&mut body);
            out.insert(id.to_string(), body);
            r = &r[(size + 1).min(r.len())..];
        }
        Ok(out)
    }
}

fn finish(
    out: std::process::Output,
    fail: impl Fn(String) -> GitError,
) -> Result<Vec<u8>, GitError> {
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(fail(if msg.is_empty() {
            format!("exited with {}", out.status)
        } else {
            msg
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn env_of(c: &Command, var: &str) -> Option<Option<String>> {
        c.get_envs()
            .find(|(k, _)| *k == OsStr::new(var))
            .map(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
    }

    #[test]
    fn one_environment_policy_with_two_scopes() {
        let dir = Path::new("/tmp");
        for scope in [Scope::Repository, Scope::Isolated] {
            let c = command(dir, scope);
            assert_eq!(c.get_program(), "git");
            assert_eq!(env_of(&c, "GIT_TERMINAL_PROMPT"), Some(Some("0".into())));
            assert_eq!(env_of(&c, "GIT_PROTOCOL_FROM_USER"), Some(Some("0".into())));
            let args: Vec<String> = c
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            assert_eq!(&args[..2], ["-C", "/tmp"]);
            assert!(args.iter().any(|a| a == "protocol.allow=never"), "{args:?}");
            assert!(args.iter().any(|a| a == "core.fsmonitor=false"), "{args:?}");
        }
        // An isolated command cannot be pointed at another repository or config.
        let c = command(dir, Scope::Isolated);
        for var in LOCATING_VARS {
            assert_eq!(env_of(&c, var), Some(None), "{var} is removed");
        }
        assert_eq!(env_of(&c, "GIT_CONFIG_NOSYSTEM"), Some(Some("1".into())));
        assert!(c.get_args().any(|a| a == "core.hooksPath=/dev/null"));
        // The repository's own commands keep the hook's index, and read paths literally.
        let c = command(dir, Scope::Repository);
        assert_eq!(env_of(&c, "GIT_INDEX_FILE"), None);
        assert_eq!(env_of(&c, "GIT_LITERAL_PATHSPECS"), Some(Some("1".into())));
    }

    /// A child's output is captured, never written into ctx's own stdout.
    #[test]
    fn git_output_is_captured_not_inherited() {
        if !available() {
            return;
        }
        let out = command(Path::new("/"), Scope::Isolated)
            .arg("--version")
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("git version"));
    }
}
