//! One server per vault: a second `ctx serve` or `ctx mcp` on a vault that another
//! process holds exits at once (1), naming the holder, instead of waiting for it.

use std::time::Duration;

use crate::serve_support::Vault;
use crate::support::ctx_in;

#[test]
fn a_second_server_on_one_vault_names_the_holder_and_exits() {
    let v = Vault::create();
    let first = v.serve(&[]);
    let pid = first.pid().expect("running");
    let held = format!("is held by `ctx serve` (pid {pid}) since ");
    let second = ctx_in(&v.repo)
        .args(["-C", "v", "serve", "--listen", "127.0.0.1:0", "--no-prompt"])
        .spawn()
        .wait_within(Duration::from_secs(30));
    second
        .assert_code(1)
        .assert_stderr_contains(".ctx/personal")
        .assert_stderr_contains(&held)
        .assert_stderr_contains("stop it or use that server");
    // It gave up before listening: nothing else was bound or printed first.
    assert!(!second.stderr.contains("listening on"), "{}", second.stderr);
    let pw = v.repo.path().join("pw.txt");
    let mcp = ctx_in(&v.repo)
        .args(["-C", "v", "mcp", "--agent", "helper", "--password-file"])
        .arg(&pw)
        .spawn()
        .wait_within(Duration::from_secs(30));
    mcp.assert_code(1).assert_stderr_contains(&held);
    // The first server still serves; once it stops, the vault is free again.
    first.get("/context/status", None).expect(200);
    drop(first);
    let again = v.serve(&[]);
    again.unlock(&v);
}
