//! The one environment policy for every process a test starts (`ctx`, `git`,
//! `age`, `ssh-keygen`, `sh`): nothing of the developer's machine gets in.
//!
//! The child starts from an empty environment. Only what a process needs to
//! start and what test tooling relies on is carried over ([`INHERITED`]); the
//! rest is fixed: a throw-away home with empty XDG folders and an empty git
//! configuration, UTC, a UTF-8 C locale. So a developer's own age identity,
//! signing keys, `CTX_*` settings, colour preferences, git config or global
//! gitignore can never change a result.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Variables copied from the test process, because a child needs them to run
/// at all (PATH) or test tooling sets them on purpose (backtraces, coverage
/// profiles). The temporary folder is the home's own: what a run leaves there
/// (a non-git repository's write lock) goes with the home.
pub const INHERITED: &[&str] = &[
    "PATH",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "LLVM_PROFILE_FILE",
    "SYSTEMROOT",
];

/// A throw-away home: `HOME` and the XDG base folders inside one temporary
/// folder, with an empty `.gitconfig`.
pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Home {
        let dir = tempfile::Builder::new()
            .prefix("ctx-test-home-")
            .tempdir()
            .expect("temporary home");
        make_home(dir.path());
        Home { dir }
    }

    /// `HOME`.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `XDG_CONFIG_HOME` (where ctx keeps signing keys and the default age identity).
    pub fn config(&self) -> PathBuf {
        self.path().join(".config")
    }

    /// Point `cmd` at this home and apply the fixed environment.
    pub fn apply(&self, cmd: &mut Command) {
        apply(cmd, self.path());
    }
}

impl Default for Home {
    fn default() -> Home {
        Home::new()
    }
}

/// Create the folders and the empty git configuration of a home at `root`.
fn make_home(root: &Path) {
    for sub in [
        ".config",
        ".cache",
        ".local/share",
        ".local/state",
        "run",
        "tmp",
    ] {
        std::fs::create_dir_all(root.join(sub)).expect("home folders");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join("run"), std::fs::Permissions::from_mode(0o700))
            .expect("runtime folder mode");
    }
    std::fs::write(root.join(".gitconfig"), b"").expect("empty .gitconfig");
}

/// A home shared by the helper processes of the whole test binary (`git`,
/// `age`, ...), kept under cargo's per-target test folder. Nothing writes to
/// it; it exists so those tools see an empty configuration too.
pub fn tool_home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hermetic-tool-home");
        make_home(&root);
        root
    })
}

/// A fresh home for a long-running child (a server a client test talks to) that
/// may outlive any value the test holds: kept under cargo's per-target test
/// folder rather than removed when dropped.
pub fn server_home() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("server-homes");
    std::fs::create_dir_all(&root).expect("server homes folder");
    let home = tempfile::Builder::new()
        .prefix("home-")
        .tempdir_in(&root)
        .expect("server home")
        .keep();
    make_home(&home);
    home
}

/// Clear `cmd`'s environment and set the fixed one, with `home` as `HOME`.
pub fn apply(cmd: &mut Command, home: &Path) {
    cmd.env_clear();
    for name in INHERITED {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("TMPDIR", home.join("tmp"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
        .env("TZ", "UTC")
        .env("LANG", "C.UTF-8")
        .env("LC_ALL", "C.UTF-8");
}
