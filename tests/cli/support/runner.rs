//! The one way tests run the `ctx` binary.
//!
//! ```ignore
//! let repo = Repo::new(&[("opencontext.yaml", MANIFEST)]);
//! let r = ctx_in(&repo).args(["validate", "--format", "json"]).run();
//! r.assert_code(0);
//! assert_eq!(r.json()["ok"], true);
//! ```
//!
//! Every run gets the hermetic environment of [`super::hermetic`]: a
//! throw-away home (shared by all runs against one [`Repo`], fresh for a bare
//! folder), no inherited `CTX_*`, `NO_COLOR` or `CLICOLOR*`, UTC and a C
//! locale. A test that wants one of those sets it with `.env(..)`.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::hermetic::Home;
use super::Repo;

/// The `ctx` binary cargo built for these tests.
pub const CTX: &str = env!("CARGO_BIN_EXE_ctx");

/// Where a run happens: a [`Repo`] (whose home is shared by its runs) or a
/// bare folder (a fresh home per run).
pub trait Workdir {
    fn workdir(&self) -> &Path;
    fn home(&self) -> Option<&Home> {
        None
    }
}

impl Workdir for Path {
    fn workdir(&self) -> &Path {
        self
    }
}

impl Workdir for PathBuf {
    fn workdir(&self) -> &Path {
        self
    }
}

impl Workdir for tempfile::TempDir {
    fn workdir(&self) -> &Path {
        self.path()
    }
}

impl Workdir for Repo {
    fn workdir(&self) -> &Path {
        self.path()
    }
    fn home(&self) -> Option<&Home> {
        Some(Repo::home(self))
    }
}

/// Start building a `ctx` run in `at`.
pub fn ctx_in<W: Workdir + ?Sized>(at: &W) -> Cmd<'_> {
    Cmd {
        dir: at.workdir().to_path_buf(),
        args: Vec::new(),
        env: Vec::new(),
        stdin: None,
        home: at.home(),
        umask: None,
        via: Vec::new(),
    }
}

/// One `ctx` invocation being built. Nothing runs until [`Cmd::run`],
/// [`Cmd::spawn`] or [`Cmd::shell`].
#[must_use = "a Cmd does nothing until .run()"]
pub struct Cmd<'a> {
    dir: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    stdin: Option<Vec<u8>>,
    home: Option<&'a Home>,
    umask: Option<u32>,
    via: Vec<String>,
}

impl<'a> Cmd<'a> {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Set one variable on top of the hermetic environment (it wins over the defaults,
    /// so `.env("XDG_CONFIG_HOME", ..)` or `.env("NO_COLOR", "1")` work).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    /// Remove a variable the hermetic environment sets (e.g. `XDG_RUNTIME_DIR`).
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Bytes for standard input (default: empty, as from `/dev/null`).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Use `home` instead of the repository's (or a fresh) one, e.g. to share
    /// keys between runs in different folders.
    pub fn home(mut self, home: &'a Home) -> Self {
        self.home = Some(home);
        self
    }

    /// Run under this file-creation mask (for tests of the modes ctx gives files).
    pub fn umask(mut self, mask: u32) -> Self {
        self.umask = Some(mask);
        self
    }

    /// Start `ctx` through a wrapper command, e.g. `["setpriv", "--reuid=65534", "--"]`
    /// to run it as another user.
    pub fn via(mut self, wrapper: &[&str]) -> Self {
        self.via = wrapper.iter().map(|s| s.to_string()).collect();
        self
    }

    fn describe(&self) -> String {
        let mut s = String::from("ctx");
        for a in &self.args {
            let a = a.to_string_lossy();
            if a.is_empty() || a.contains(char::is_whitespace) {
                s.push_str(&format!(" {a:?}"));
            } else {
                s.push(' ');
                s.push_str(&a);
            }
        }
        format!("`{s}` in {}", self.dir.display())
    }

    fn command(&self, program: &str, home: &Home) -> Command {
        let mut cmd = Command::new(program);
        home.apply(&mut cmd);
        cmd.current_dir(&self.dir);
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        cmd
    }

    /// Run to completion.
    pub fn run(self) -> Run {
        self.spawn().wait()
    }

    /// Start `ctx` and return while it runs (for concurrency and pipe tests).
    pub fn spawn(self) -> Spawned {
        let described = self.describe();
        let mut line: Vec<String> = Vec::new();
        if let Some(mask) = self.umask {
            let script = format!("umask {mask:03o} && exec \"$0\" \"$@\"");
            line.extend(["sh".into(), "-c".into(), script]);
        }
        line.extend(self.via.iter().cloned());
        line.push(CTX.into());
        let leading: Vec<&str> = line[1..].iter().map(String::as_str).collect();
        let program = line[0].clone();
        self.start(&program, &leading, described)
    }

    /// Run `script` with `sh -c` in the same environment, `$CTX` naming the
    /// binary: for shell pipelines such as `"$CTX" list | head -1`.
    pub fn shell(self, script: &str) -> Run {
        let described = format!("`sh -c {script:?}` in {}", self.dir.display());
        self.env("CTX", CTX)
            .start("sh", &["-c", script], described)
            .wait()
    }

    fn start(self, program: &str, leading: &[&str], described: String) -> Spawned {
        let fresh = self.home.is_none().then(Home::new);
        let home = self.home.or(fresh.as_ref()).expect("a home");
        let mut cmd = self.command(program, home);
        cmd.args(leading).args(&self.args);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {described}: {e}"));
        if let Some(bytes) = &self.stdin {
            let mut pipe = child.stdin.take().expect("stdin pipe");
            // A child that exits without reading its input is not an error here.
            let _ = pipe.write_all(bytes);
        }
        Spawned {
            child,
            described,
            redact: redactions(&self.dir, home.path()),
            _home: fresh,
        }
    }
}

/// A running `ctx` (see [`Cmd::spawn`]); owns its fresh home until it ends.
pub struct Spawned {
    pub child: Child,
    described: String,
    redact: Vec<(String, &'static str)>,
    _home: Option<Home>,
}

impl Spawned {
    /// Like [`Spawned::wait`], but kill `ctx` and fail the test if it has not
    /// ended within `limit` (for inputs that once made ctx hang, such as FIFOs).
    pub fn wait_within(mut self, limit: std::time::Duration) -> Run {
        let start = std::time::Instant::now();
        while self.child.try_wait().expect("try_wait").is_none() {
            if start.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("{} did not finish within {limit:?}", self.described);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.wait()
    }

    /// Wait for the end and collect what is left of both streams.
    pub fn wait(self) -> Run {
        let out = self
            .child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("{}: {e}", self.described));
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            command: self.described,
            redact: self.redact,
        }
    }
}

/// Temporary paths that differ between runs, as (path, placeholder), longest first.
fn redactions(dir: &Path, home: &Path) -> Vec<(String, &'static str)> {
    let mut v = Vec::new();
    for (path, name) in [(dir, "[DIR]"), (home, "[HOME]")] {
        v.push((path.display().to_string(), name));
        if let Ok(real) = path.canonicalize() {
            v.push((real.display().to_string(), name));
        }
    }
    v.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
    v.dedup_by(|a, b| a.0 == b.0);
    v
}

/// The result of one `ctx` run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// What ran and where, for assertion messages.
    pub command: String,
    redact: Vec<(String, &'static str)>,
}

impl Run {
    /// The command, its exit code and both streams: what a failing assertion shows.
    pub fn describe(&self) -> String {
        format!(
            "{}\nexit code: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }

    /// Exit code and both streams, with the working folder and the home shown as
    /// `[DIR]` and `[HOME]`: the text a snapshot test compares.
    pub fn transcript(&self) -> String {
        let clean = |text: &str| {
            self.redact
                .iter()
                .fold(text.to_string(), |t, (path, name)| {
                    t.replace(path.as_str(), name)
                })
        };
        let mut out = format!(
            "exit code: {}\n--- stdout\n{}",
            self.code,
            clean(&self.stdout)
        );
        if !out.ends_with('\n') {
            out.push_str("\n[no newline at the end]\n");
        }
        if !self.stderr.is_empty() {
            out.push_str(&format!("--- stderr\n{}", clean(&self.stderr)));
        }
        out
    }

    /// Standard output parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.describe()))
    }

    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert!(
            self.code == code,
            "expected exit code {code}, got {}\n{}",
            self.code,
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        self.assert_code(0)
    }

    #[track_caller]
    pub fn assert_stdout_contains(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn assert_stderr_contains(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.describe()
        );
        self
    }
}
