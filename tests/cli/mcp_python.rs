//! The official MCP Python SDK (`mcp` 2.x) as a second, independent client of
//! `ctx mcp` (tests/interop/mcp_client.py), in both protocol eras. Skipped
//! unless its virtual environment exists (`.ci/run` creates `.venv-mcp`);
//! with `CTX_REQUIRE_INTEROP=1` a missing environment fails instead.

use std::path::PathBuf;
use std::process::Command;

pub fn python() -> Option<PathBuf> {
    let p = std::env::var_os("CTX_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv-mcp/bin/python"));
    p.is_file().then_some(p)
}

#[test]
fn the_official_python_sdk_interoperates_in_both_eras() {
    let Some(py) = python() else {
        assert!(
            std::env::var("CTX_REQUIRE_INTEROP").as_deref() != Ok("1"),
            "CTX_REQUIRE_INTEROP=1 but .venv-mcp/bin/python (the Python MCP SDK) is missing"
        );
        eprintln!("note: .venv-mcp is absent; skipping the Python MCP SDK interop test");
        return;
    };
    let repo = super::mcp::shop();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/mcp_client.py");
    let out = Command::new(py)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_ctx"))
        .arg(repo.path())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}\n{stderr}");
}
