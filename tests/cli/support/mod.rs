//! Test support: the hermetic `ctx` runner, the git helper, external tools,
//! fixture repositories in temporary folders.
//!
//! A new test needs only this:
//!
//! ```ignore
//! use crate::support::{ctx_in, Repo, MANIFEST, MISSION};
//!
//! #[test]
//! fn a_clean_repository_validates() {
//!     let repo = Repo::new(&[("opencontext.yaml", MANIFEST), ("context/mission.md", MISSION)]);
//!     ctx_in(&repo).args(["validate"]).run().assert_ok().assert_stdout_contains("✓ valid");
//! }
//! ```

use std::path::{Path, PathBuf};

pub mod fixtures;
pub mod git;
pub mod hermetic;
pub mod runner;
pub mod tools;

pub use hermetic::Home;
pub use runner::{ctx_in, Cmd, Run, Spawned, Workdir, CTX};
pub use tools::require_tool;

/// Run `ctx` in `dir` with `args`: shorthand for `ctx_in(dir).args(args).run()`.
pub fn ctx<W: Workdir + ?Sized>(dir: &W, args: &[&str]) -> Run {
    ctx_in(dir).args(args).run()
}

/// [`ctx`] with extra environment variables:
/// shorthand for `ctx_in(dir).args(args).envs(env).run()`.
pub fn ctx_env<W: Workdir + ?Sized>(dir: &W, args: &[&str], env: &[(&str, &str)]) -> Run {
    ctx_in(dir).args(args).envs(env.iter().copied()).run()
}

/// A temporary repository built from (path, contents) pairs, with its own
/// throw-away home that every `ctx` run against it shares.
pub struct Repo {
    pub dir: tempfile::TempDir,
    home: Home,
}

impl Repo {
    pub fn new(files: &[(&str, &str)]) -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        for (rel, text) in files {
            write(dir.path(), rel, text.as_bytes());
        }
        Repo {
            dir,
            home: Home::new(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The home (`HOME`, XDG folders) of every run against this repository.
    pub fn home(&self) -> &Home {
        &self.home
    }

    pub fn write(&self, rel: &str, text: &str) {
        write(self.dir.path(), rel, text.as_bytes());
    }

    /// Shorthand for `ctx_in(self).args(args).run()`.
    pub fn ctx(&self, args: &[&str]) -> Run {
        ctx_in(self).args(args).run()
    }
}

impl AsRef<Path> for Repo {
    fn as_ref(&self) -> &Path {
        self.path()
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
    extensions:
      ctx.scope:
        reserved_exclude: [policies.internal.*]
"#;

pub const MISSION: &str = "---\nid: mission\ntype: mission\nlayer: L0\nauthority: canonical\nowner: founders\ncanonical_source: true\n---\n\nMake refunds boring.\n";
