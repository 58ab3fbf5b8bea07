//! Helpers: run the binary, write fixture repositories into temp folders.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub mod fixtures;

/// The result of one `ctx` run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Run `ctx` in `dir` with `args` (colour off, fixed environment).
pub fn ctx(dir: &Path, args: &[&str]) -> Run {
    ctx_env(dir, args, &[])
}

pub fn ctx_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctx"));
    cmd.current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(cmd.output().expect("ctx runs"))
}

/// A temporary repository built from (path, contents) pairs.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    pub fn new(files: &[(&str, &str)]) -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        for (rel, text) in files {
            write(dir.path(), rel, text.as_bytes());
        }
        Repo { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: &str) {
        write(self.dir.path(), rel, text.as_bytes());
    }

    pub fn ctx(&self, args: &[&str]) -> Run {
        ctx(self.path(), args)
    }
}

pub fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, bytes).expect("write");
}

/// The project root (for fixtures and the shared reference folder).
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared OpenContext reference folder, when present beside the project.
pub fn reference() -> Option<PathBuf> {
    let p = project_root().join("../shared/reference/opencontext");
    p.is_dir().then_some(p)
}

/// A small manifest with two collections and a support role.
pub const MANIFEST: &str = r#"opencontext: "1.0"
id: acme
name: ACME
context:
  mission: ./context/mission.md
collections:
  policies: ./context/policies/**
roles:
  support:
    include: [mission, policies.*]
    exclude: [policies.internal.*]
"#;

pub const MISSION: &str = "---\nid: mission\ntype: mission\nlayer: L0\nauthority: canonical\nowner: founders\ncanonical_source: true\n---\n\nMake refunds boring.\n";
