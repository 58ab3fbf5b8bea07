//! External tools some tests need (`git`, `age`, `age-keygen`, `ssh-keygen`).
//!
//! Without a tool, its tests print a note and pass vacuously, so that a
//! developer without `age` can still run the suite. With
//! `CTX_REQUIRE_INTEROP=1` (set by `.ci/run`) a missing tool fails the test
//! instead: CI must never go green by skipping.

use std::path::Path;
use std::process::{Command, Stdio};

use super::hermetic;

/// Whether `bin` can be started. A missing tool is a skip, or a failure
/// under `CTX_REQUIRE_INTEROP=1`.
#[track_caller]
pub fn require_tool(bin: &str) -> bool {
    let found = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            std::env::var_os("CTX_REQUIRE_INTEROP").is_none_or(|v| v != "1"),
            "`{bin}` is not installed, and CTX_REQUIRE_INTEROP=1 forbids skipping its tests \
             (apt-get install git age openssh-client)"
        );
        eprintln!("note: `{bin}` is not installed; skipping this test (CTX_REQUIRE_INTEROP=1 makes it fail)");
    }
    found
}

/// Run an external tool in the hermetic environment with optional stdin;
/// returns (exit code, stdout bytes, stderr text).
pub fn tool(bin: &str, args: &[&str], stdin: Option<&[u8]>) -> (i32, Vec<u8>, String) {
    tool_in(None, bin, args, stdin)
}

/// [`tool`] in the folder `dir`.
pub fn tool_in(
    dir: Option<&Path>,
    bin: &str,
    args: &[&str],
    stdin: Option<&[u8]>,
) -> (i32, Vec<u8>, String) {
    use std::io::Write;
    let mut cmd = Command::new(bin);
    hermetic::apply(&mut cmd, hermetic::tool_home());
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let mut child = cmd
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{bin} runs: {e}"));
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
