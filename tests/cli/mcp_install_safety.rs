//! `ctx mcp install` never writes what would break elsewhere or clobber the user:
//! a project file holds no path of this machine and still starts the server on any
//! clone, each repository has its own user entry and replacing a different one
//! takes `--force`, a personal vault's consumers are accepted as `ctx mcp` accepts
//! them, `--dry-run` writes nothing, and a file the host could not read is kept.

use serde_json::{json, Value};

use super::mcp::{call, connect, connect_with, Answer, Era};
use super::mcp_install::{ctx_exe, install, repo};

#[tokio::test(flavor = "current_thread")]
async fn the_project_file_names_no_machine_path_and_starts_the_server_on_any_clone() {
    let r = repo("shop");
    let home = r.home().path().to_path_buf();
    let out = install(
        r.path(),
        &home,
        &["--host", "claude-code", "--agent", "helper", "--write"],
    );
    assert_eq!(out.code, 0, "{}", out.describe());
    let text = std::fs::read_to_string(r.path().join(".mcp.json")).unwrap();
    let real = std::fs::canonicalize(r.path()).unwrap();
    for machine in [
        r.path().to_str().unwrap(),
        real.to_str().unwrap(),
        &ctx_exe(),
    ] {
        assert!(
            !text.contains(machine),
            "{machine} in the shared file:\n{text}"
        );
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    let entry = &v["mcpServers"]["ctx-shop"];
    assert_eq!(entry["command"], "ctx");
    // A clone elsewhere, the host started in a subfolder: the entry still serves it.
    let clone = tempfile::tempdir().unwrap();
    for f in ["opencontext.yaml", "notes/hello.md", ".mcp.json"] {
        let bytes = std::fs::read(r.path().join(f)).unwrap();
        crate::support::write(clone.path(), f, &bytes);
    }
    std::fs::create_dir_all(clone.path().join("notes/deeper")).unwrap();
    let args: Vec<&str> = entry["args"].as_array().unwrap()[1..]
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let s = connect(
        &clone.path().join("notes/deeper"),
        &args,
        Era::Handshake,
        false,
        Answer::Decline,
    )
    .await;
    let status = call(&s, "context_status", json!({})).await;
    assert_ne!(status.is_error, Some(true), "{status:?}");
    assert!(super::mcp::text(&status).contains("helper"), "{status:?}");
    s.cancel().await.expect("close");
}

#[test]
fn a_second_repository_gets_its_own_user_entry_and_a_clash_needs_force() {
    let shop = repo("shop");
    let lab = repo("lab");
    let home = shop.home().path().to_path_buf();
    let file = home.join(".codeium/windsurf/mcp_config.json");
    for r in [&shop, &lab] {
        let out = install(
            r.path(),
            &home,
            &["--host", "windsurf", "--agent", "helper", "--write"],
        );
        assert_eq!(out.code, 0, "{}", out.describe());
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let servers = v["mcpServers"].as_object().unwrap();
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["ctx-shop", "ctx-lab"]);
    let shop_root = std::fs::canonicalize(shop.path()).unwrap();
    assert!(servers["ctx-shop"]["args"]
        .to_string()
        .contains(shop_root.to_str().unwrap()));

    // lab under shop's name: a different entry, so it is refused without --force.
    let before = std::fs::read(&file).unwrap();
    let clash = [
        "--host", "windsurf", "--agent", "helper", "--name", "ctx-shop", "--write",
    ];
    let out = install(lab.path(), &home, &clash);
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(
        out.stderr.contains("different `ctx-shop` entry") && out.stderr.contains("--force"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing was written");
    let lab_root = std::fs::canonicalize(lab.path()).unwrap();
    let dry = install(lab.path(), &home, &[&clash[..6], &["--dry-run"]].concat());
    assert_eq!(
        dry.code,
        1,
        "the dry run refuses as the write would: {}",
        dry.describe()
    );
    let (old, new) = (shop_root.to_str().unwrap(), lab_root.to_str().unwrap());
    let changed = |sign: char, root: &str| {
        dry.stdout
            .lines()
            .any(|l| l.starts_with(sign) && l.contains(&format!("\"{root}\"")))
    };
    assert!(changed('-', old) && changed('+', new), "{}", dry.stdout);
    let forced = install(lab.path(), &home, &[&clash[..], &["--force"]].concat());
    assert_eq!(forced.code, 0, "{}", forced.describe());
    assert!(
        forced.stdout.contains("replaced (--force) `ctx-shop`"),
        "{}",
        forced.stdout
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(v["mcpServers"]["ctx-shop"]["args"]
        .to_string()
        .contains(lab_root.to_str().unwrap()));
}

#[test]
fn dry_run_shows_a_unified_diff_and_writes_nothing() {
    let r = repo("shop");
    let home = r.home().path().to_path_buf();
    r.write(".cursor/mcp.json", "{\n  \"mcpServers\": {}\n}\n");
    let out = install(
        r.path(),
        &home,
        &["--host", "cursor", "--agent", "helper", "--dry-run"],
    );
    assert_eq!(out.code, 0, "{}", out.describe());
    assert!(
        out.stdout
            .starts_with("--- .cursor/mcp.json\n+++ .cursor/mcp.json\n@@ "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("+    \"ctx-shop\": {"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("would add `ctx-shop`"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(r.path().join(".cursor/mcp.json")).unwrap(),
        "{\n  \"mcpServers\": {}\n}\n"
    );
    let fresh = install(
        r.path(),
        &home,
        &["--host", "zed", "--agent", "helper", "--dry-run"],
    );
    assert!(
        fresh
            .stdout
            .starts_with("--- /dev/null\n+++ .zed/settings.json\n"),
        "{}",
        fresh.stdout
    );
    assert!(!r.path().join(".zed").exists(), "a dry run creates nothing");
}

#[test]
fn printing_writes_nothing_and_client_is_still_accepted() {
    let r = repo("shop");
    let home = r.home().path().to_path_buf();
    let out = install(
        r.path(),
        &home,
        &["--client", "claude-code", "--agent", "helper"],
    );
    assert_eq!(out.code, 0, "{}", out.describe());
    let v: Value = serde_json::from_str(&out.stdout).expect("the entry as JSON");
    assert_eq!(
        v["mcpServers"]["ctx-shop"]["args"],
        json!(["mcp", "--agent", "helper"])
    );
    assert!(
        !r.path().join(".mcp.json").exists(),
        "printing writes nothing"
    );
    let toml = install(r.path(), &home, &["--host", "codex", "--agent", "helper"]);
    assert!(
        toml.stdout.starts_with("[mcp_servers.ctx-shop]\n"),
        "{}",
        toml.stdout
    );
}

#[test]
fn a_file_the_host_could_not_read_is_kept_and_named() {
    let r = repo("shop");
    let home = r.home().path().to_path_buf();
    r.write(".mcp.json", "{ broken");
    let out = install(
        r.path(),
        &home,
        &["--host", "claude-code", "--agent", "helper", "--write"],
    );
    assert_eq!(out.code, 1, "{}", out.describe());
    assert!(
        out.stderr.contains(".mcp.json") && out.stderr.contains("not valid JSON at line 1"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(r.path().join(".mcp.json")).unwrap(),
        "{ broken"
    );
    let unknown = install(r.path(), &home, &["--host", "cursor", "--agent", "nobody"]);
    assert_eq!(unknown.code, 2, "{}", unknown.describe());
    let project = install(
        r.path(),
        &home,
        &[
            "--host", "windsurf", "--scope", "project", "--agent", "helper",
        ],
    );
    assert_eq!(project.code, 2, "{}", project.describe());
    assert!(
        project.stderr.contains("--scope user"),
        "{}",
        project.stderr
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_vaults_consumer_is_accepted_as_ctx_mcp_accepts_it() {
    // A vault with `visa-agent` registered.
    let v = super::mcp_personal::vault(&[]);
    let home = v.repo.home().path().to_path_buf();
    let pw = v.repo.path().join("pw.txt");
    let pw_arg = pw.to_str().unwrap();
    let base = ["--host", "claude-desktop", "--agent", "visa-agent"];
    let missing = install(&v.dir(), &home, &base);
    assert_eq!(missing.code, 2, "{}", missing.describe());
    assert!(
        missing.stderr.contains("--password-file"),
        "{}",
        missing.stderr
    );
    let shared = install(
        &v.dir(),
        &home,
        &[
            &base[..],
            &["--scope", "project", "--password-file", pw_arg],
        ]
        .concat(),
    );
    assert_eq!(shared.code, 2, "{}", shared.describe());
    let bad = install(
        &v.dir(),
        &home,
        &[
            "--host",
            "claude-desktop",
            "--agent",
            "Visa Agent",
            "--password-file",
            pw_arg,
        ],
    );
    assert_eq!(bad.code, 2, "{}", bad.describe());

    let out = install(
        &v.dir(),
        &home,
        &[
            &base[..],
            &["--password-file", pw_arg, "--mode", "read", "--write"],
        ]
        .concat(),
    );
    assert_eq!(out.code, 0, "{}", out.describe());
    let file = home.join(".config/Claude/claude_desktop_config.json");
    if !cfg!(target_os = "linux") {
        return;
    }
    let cfg: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let entry = &cfg["mcpServers"]["ctx-me"];
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let real_pw = std::fs::canonicalize(&pw).unwrap();
    assert_eq!(
        args[..7],
        [
            "mcp",
            "--agent",
            "visa-agent",
            "--password-file",
            real_pw.to_str().unwrap(),
            "--mode",
            "read"
        ]
    );
    // The entry as the host runs it: the vault serves that consumer.
    let run: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let config = v.repo.home().config();
    let s = connect_with(
        &home,
        &run,
        &[("HOME", &home), ("XDG_CONFIG_HOME", &config)],
        Era::Handshake,
        false,
        Answer::Decline,
    )
    .await;
    let status = call(&s, "context_status", json!({})).await;
    assert!(
        super::mcp::text(&status).contains("visa-agent"),
        "{status:?}"
    );
    s.cancel().await.expect("close");
}
