//! scripts/install.sh for real, offline: a fake release (archives and SHA256SUMS) in
//! a local folder served through CTX_INSTALL_BASE_URL=file://..., a `uname` that
//! reports each platform, and a `sudo` that records any call. A good archive installs
//! and runs; a tampered, unlisted or malformed one is refused and the installed ctx
//! stays as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::distribution::{release_archives, sh, sha256_hex, text, VERSION};
use crate::support::hermetic::Home;

/// A release folder with one archive per `target`, each holding a `ctx` that runs the
/// ctx under test and names its target, and the archives' SHA256SUMS.
#[cfg(unix)]
fn fake_release(root: &Path, targets: &[&str]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let release = root.join("release");
    std::fs::create_dir_all(&release).unwrap();
    let mut sums = String::new();
    for target in targets {
        let pkg = release.join(format!("ctx-{target}"));
        std::fs::create_dir_all(&pkg).unwrap();
        let stub = format!(
            "#!/bin/sh\n# target: {target}\nexec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_ctx")
        );
        std::fs::write(pkg.join("ctx"), stub).unwrap();
        std::fs::set_permissions(pkg.join("ctx"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let archive = format!("ctx-{target}.tar.gz");
        let tar = Command::new("tar")
            .current_dir(&release)
            .args(["-czf", &archive, &format!("ctx-{target}")])
            .status()
            .expect("tar runs");
        assert!(tar.success());
        std::fs::remove_dir_all(&pkg).unwrap();
        let bytes = std::fs::read(release.join(&archive)).unwrap();
        sums.push_str(&format!("{}  {archive}\n", sha256_hex(&bytes)));
    }
    std::fs::write(release.join("SHA256SUMS"), sums).unwrap();
    release
}

/// Tools the installer finds first on PATH: `uname` reporting FAKE_OS / FAKE_ARCH, and a
/// `sudo` that records any call (the installer must never make one).
#[cfg(unix)]
fn fake_tools(root: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = root.join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tools = [
        ("uname", "#!/bin/sh\ncase $1 in -s) echo \"$FAKE_OS\" ;; -m) echo \"$FAKE_ARCH\" ;; *) exit 1 ;; esac\n".to_string()),
        ("sudo", format!("#!/bin/sh\necho \"$*\" >> '{}'\nexit 1\n", root.join("sudo.log").display())),
    ];
    for (name, script) in tools {
        std::fs::write(bin.join(name), script).unwrap();
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// Run scripts/install.sh as if on `os`/`arch`, with fake tools first on PATH.
#[cfg(unix)]
fn install(
    home: &Home,
    tools: &Path,
    platform: (&str, &str),
    env: &[(&str, String)],
    args: &[&str],
) -> Output {
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut all = vec![
        ("PATH", path),
        ("FAKE_OS", platform.0.to_string()),
        ("FAKE_ARCH", platform.1.to_string()),
    ];
    all.extend(env.iter().cloned());
    sh(home, "scripts/install.sh", args, &all)
}

#[cfg(unix)]
#[test]
fn install_sh_installs_the_verified_archive_for_each_platform() {
    use std::os::unix::fs::PermissionsExt;
    if !crate::support::tools::require_tool("tar") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let unix: Vec<String> = release_archives()
        .into_iter()
        .filter(|(_, e)| e == "tar.gz")
        .map(|(t, _)| t)
        .collect();
    let targets: Vec<&str> = unix.iter().map(String::as_str).collect();
    let release = fake_release(tmp.path(), &targets);
    let tools = fake_tools(tmp.path());
    let base = format!("file://{}", release.display());
    let platforms = [
        ("Linux", "x86_64", "x86_64-unknown-linux-musl"),
        ("Linux", "aarch64", "aarch64-unknown-linux-musl"),
        ("Linux", "arm64", "aarch64-unknown-linux-musl"),
        ("Darwin", "x86_64", "x86_64-apple-darwin"),
        ("Darwin", "arm64", "aarch64-apple-darwin"),
    ];
    let mut covered: Vec<&str> = platforms.iter().map(|p| p.2).collect();
    covered.sort();
    covered.dedup();
    assert_eq!(
        covered, targets,
        "every Unix archive of the release has a platform here"
    );
    for (i, (os, arch, target)) in platforms.iter().enumerate() {
        let home = Home::new();
        // The three ways to choose the folder: --to, CTX_INSTALL_DIR, the default.
        let (dir, args, env): (PathBuf, Vec<String>, Vec<(&str, String)>) = match i % 3 {
            0 => {
                let d = tmp.path().join(format!("to-{i}"));
                (
                    d.clone(),
                    vec!["--to".into(), d.display().to_string()],
                    vec![],
                )
            }
            1 => {
                let d = tmp.path().join(format!("env-{i}/bin"));
                (
                    d.clone(),
                    vec![],
                    vec![("CTX_INSTALL_DIR", d.display().to_string())],
                )
            }
            _ => (home.path().join(".local/bin"), vec![], vec![]),
        };
        let mut env = env;
        env.push(("CTX_INSTALL_BASE_URL", base.clone()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = install(&home, &tools, (os, arch), &env, &args);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{os}/{arch}: {stderr}");
        let installed = dir.join("ctx");
        let body = std::fs::read_to_string(&installed).unwrap();
        assert!(
            body.contains(&format!("# target: {target}\n")),
            "{os}/{arch} got {body}"
        );
        assert_eq!(
            std::fs::metadata(&installed).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(
            text(&out.stdout),
            format!("installed ctx {VERSION} to {}\n", installed.display())
        );
        assert!(stderr.contains("is not on your PATH"), "{stderr}");
        let run = Command::new(&installed).arg("--version").output().unwrap();
        assert_eq!(text(&run.stdout), format!("ctx {VERSION}\n"));
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leftovers, ["ctx"], "{os}/{arch}");
    }
    assert!(
        !tmp.path().join("sudo.log").exists(),
        "the installer called sudo"
    );
}

#[cfg(unix)]
#[test]
fn install_sh_refuses_a_tampered_or_unlisted_archive_and_keeps_the_installed_ctx() {
    if !crate::support::tools::require_tool("tar") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let target = "x86_64-unknown-linux-musl";
    let archive = format!("ctx-{target}.tar.gz");
    let release = fake_release(tmp.path(), &[target]);
    let tools = fake_tools(tmp.path());
    let home = Home::new();
    let dir = tmp.path().join("bin");
    let env = [(
        "CTX_INSTALL_BASE_URL",
        format!("file://{}", release.display()),
    )];
    let args = ["--to", dir.to_str().unwrap()];
    let run = |env: &[(&str, String)]| install(&home, &tools, ("Linux", "x86_64"), env, &args);
    let out = run(&env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let good = std::fs::read(dir.join("ctx")).unwrap();

    // A different archive under the old sums: refused before it is unpacked.
    let sums = std::fs::read_to_string(release.join("SHA256SUMS")).unwrap();
    let mut bytes = std::fs::read(release.join(&archive)).unwrap();
    bytes.extend_from_slice(b"tampered");
    std::fs::write(release.join(&archive), &bytes).unwrap();
    let out = run(&env);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("checksum mismatch for {archive}"))
            && stderr.contains(&sha256_hex(&bytes))
            && stderr.contains("refusing to install it"),
        "{stderr}"
    );
    // Not listed at all, or listed with a malformed sum.
    for (case, listing) in [
        (
            "unlisted",
            format!("{}  ctx-other.tar.gz\n", sha256_hex(&bytes)),
        ),
        (
            "malformed",
            format!("{}  {archive}\n", &sha256_hex(&bytes)[2..]),
        ),
        ("twice", format!("{sums}{sums}")),
    ] {
        std::fs::write(release.join("SHA256SUMS"), listing).unwrap();
        let out = run(&env);
        assert_eq!(out.status.code(), Some(1), "{case}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(&archive),
            "{case}: {}",
            text(&out.stderr)
        );
    }
    // Plain http, an unknown CPU, a bad version: refused before any download.
    let http = [("CTX_INSTALL_BASE_URL", "http://127.0.0.1:9/ctx".to_string())];
    let out = run(&http);
    assert!(
        text(&out.stderr).contains("must start with https:// or file://"),
        "{}",
        text(&out.stderr)
    );
    let out = install(&home, &tools, ("Linux", "riscv64"), &env, &args);
    assert!(
        text(&out.stderr).contains("no prebuilt ctx for Linux/riscv64"),
        "{}",
        text(&out.stderr)
    );
    let out = install(
        &home,
        &tools,
        ("Linux", "x86_64"),
        &env,
        &["--version", "1.0; rm -rf /"],
    );
    assert!(
        text(&out.stderr).contains("is not a release version"),
        "{}",
        text(&out.stderr)
    );

    assert_eq!(
        std::fs::read(dir.join("ctx")).unwrap(),
        good,
        "the installed ctx is untouched"
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["ctx"], "no staged file is left behind");
    assert!(
        !tmp.path().join("sudo.log").exists(),
        "the installer called sudo"
    );
}

/// Without CTX_INSTALL_BASE_URL the installer asks the GitHub release of this project,
/// over https only (a `curl` stand-in records the call and fails like a network error).
#[cfg(unix)]
#[test]
fn install_sh_downloads_from_the_github_release_over_https_only() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let tools = fake_tools(tmp.path());
    let log = tmp.path().join("curl.log");
    std::fs::write(
        tools.join("curl"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexit 22\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(tools.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = Home::new();
    let repo = ctx_core::ci::ACTION_REPOSITORY;
    for (args, url) in [
        (
            vec!["--version", "v0.1.0"],
            format!("https://github.com/{repo}/releases/download/v0.1.0/SHA256SUMS"),
        ),
        (
            vec![],
            format!("https://github.com/{repo}/releases/latest/download/SHA256SUMS"),
        ),
    ] {
        let out = install(&home, &tools, ("Darwin", "arm64"), &[], &args);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            text(&out.stderr).contains(&format!("could not download {url}")),
            "{}",
            text(&out.stderr)
        );
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    for call in calls.lines() {
        assert!(
            call.contains("--proto =https,file --proto-redir =https"),
            "{call}"
        );
        assert!(call.contains("--fail"), "{call}");
    }
    assert_eq!(
        calls.lines().count(),
        2,
        "it stops at the first failed download"
    );
}
