//! ctx without a Rust toolchain: the release workflow, the GitHub Action, the
//! workflow `ctx init --ci github` writes and the pre-commit hooks are checked
//! offline — they parse, agree with each other on archive names, their shell
//! scripts are valid bash, and every ctx command they run exists with those flags
//! and succeeds on a fresh repository.

use std::path::Path;

use serde_json::Value;

use crate::support::{ctx, project_root};

fn yaml(rel: &str) -> Value {
    let text = std::fs::read_to_string(project_root().join(rel)).unwrap();
    ctx_core::yaml::parse(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every platform a release serves: (target, archive extension).
const TARGETS: [(&str, &str); 5] = [
    ("x86_64-unknown-linux-musl", "tar.gz"),
    ("aarch64-unknown-linux-musl", "tar.gz"),
    ("x86_64-apple-darwin", "tar.gz"),
    ("aarch64-apple-darwin", "tar.gz"),
    ("x86_64-pc-windows-msvc", "zip"),
];

fn run_scripts(doc: &Value, steps_at: &[&str]) -> Vec<String> {
    let mut node = doc;
    for k in steps_at {
        node = &node[*k];
    }
    node.as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str().map(str::to_string))
        .collect()
}

fn release_scripts(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for job in doc["jobs"].as_object().unwrap().keys() {
        out.extend(run_scripts(doc, &["jobs", job, "steps"]));
    }
    out
}

#[test]
fn release_workflow_builds_every_platform_with_sums() {
    let doc = yaml(".github/workflows/release.yml");
    let tags = doc["on"]["push"]["tags"][0].as_str().unwrap();
    assert!(tags.starts_with('v'), "{tags}");
    let matrix = doc["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap();
    let mut built: Vec<(String, String)> = matrix
        .iter()
        .map(|m| {
            (
                m["target"].as_str().unwrap().to_string(),
                m["archive"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    built.sort();
    let mut want: Vec<(String, String)> = TARGETS
        .iter()
        .map(|(t, a)| (t.to_string(), a.to_string()))
        .collect();
    want.sort();
    assert_eq!(built, want);
    let scripts = release_scripts(&doc).join("\n");
    assert!(scripts.contains("cargo build --release --locked --bin ctx --target"));
    assert!(scripts.contains("sha256sum ctx-* > SHA256SUMS"));
    assert!(scripts.contains("gh release create"));
    assert!(
        doc["jobs"]["publish"]["needs"]
            .as_array()
            .is_some_and(|n| n.iter().any(|j| j == "build")),
        "publishing waits for every build"
    );
    // Least privilege: only the publishing job may write.
    assert_eq!(doc["permissions"]["contents"], "read");
    assert_eq!(doc["jobs"]["publish"]["permissions"]["contents"], "write");
}

#[test]
fn the_action_downloads_what_the_release_publishes_and_verifies_it() {
    let doc = yaml("action.yml");
    assert_eq!(doc["runs"]["using"], "composite");
    assert_eq!(
        doc["inputs"]["command"]["default"],
        "doctor --format github"
    );
    let install = run_scripts(&doc, &["runs", "steps"]).join("\n");
    // The platform table names exactly the release's archives.
    let mut mapped: Vec<(String, String)> = install
        .lines()
        .filter_map(|l| {
            let t = l.split("target=").nth(1)?.split(';').next()?.to_string();
            let e = l
                .split("ext=")
                .nth(1)?
                .split(';')
                .next()?
                .trim()
                .to_string();
            Some((t, e))
        })
        .collect();
    mapped.sort();
    let mut want: Vec<(String, String)> = TARGETS
        .iter()
        .map(|(t, a)| (t.to_string(), a.to_string()))
        .collect();
    want.sort();
    assert_eq!(mapped, want);
    assert!(install.contains("archive=\"ctx-$target.$ext\""));
    assert!(install.contains("SHA256SUMS"));
    assert!(install.contains("sha256sum -c") && install.contains("shasum -a 256 -c"));
    // The archive is checked before it is unpacked.
    assert!(install.find("sha256sum -c").unwrap() < install.find("tar -xzf").unwrap());
    assert!(install.contains("--proto '=https'"));
}

/// `${{ ... }}` expressions replaced by a word, so bash can check the syntax.
fn without_expressions(script: &str) -> String {
    let mut out = String::new();
    let mut rest = script;
    while let Some(i) = rest.find("${{") {
        out.push_str(&rest[..i]);
        out.push_str("EXPR");
        rest = &rest[i..];
        rest = rest.find("}}").map_or("", |j| &rest[j + 2..]);
    }
    out.push_str(rest);
    out
}

#[test]
fn every_shell_script_is_valid_bash() {
    let Ok(_) = std::process::Command::new("bash").arg("--version").output() else {
        eprintln!("note: bash is absent; skipping");
        return;
    };
    let mut scripts = release_scripts(&yaml(".github/workflows/release.yml"));
    scripts.extend(run_scripts(&yaml("action.yml"), &["runs", "steps"]));
    assert!(scripts.len() >= 8);
    for s in scripts {
        let out = std::process::Command::new("bash")
            .args(["-n", "-c", &without_expressions(&s)])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "bash -n fails:\n{s}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every ctx command line the CI files run, without the leading `ctx`.
fn ci_commands(init_workflow: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let action = yaml("action.yml");
    out.push(
        action["inputs"]["command"]["default"]
            .as_str()
            .unwrap()
            .to_string(),
    );
    for step in init_workflow["jobs"]["ctx"]["steps"].as_array().unwrap() {
        if let Some(c) = step["with"]["command"].as_str() {
            out.push(c.to_string());
        }
    }
    for hook in yaml(".pre-commit-hooks.yaml").as_array().unwrap() {
        let entry = hook["entry"].as_str().unwrap();
        out.push(
            entry
                .strip_prefix("ctx ")
                .expect("hooks run ctx")
                .to_string(),
        );
    }
    for script in release_scripts(&yaml(".github/workflows/release.yml")) {
        for line in script.lines() {
            if let Some(rest) = line.trim().strip_prefix("\"$bin\" ") {
                out.push(rest.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn init_repo(dir: &Path) {
    let r = ctx(dir, &["init", "repo", "--yes", "--ci", "github"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn init_ci_github_writes_a_workflow_using_the_action() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(".git")).unwrap();
    init_repo(tmp.path());
    let path = tmp.path().join(".github/workflows/context.yml");
    let text = std::fs::read_to_string(&path).expect("workflow at the git root");
    let doc = ctx_core::yaml::parse(&text).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    let steps = doc["jobs"]["ctx"]["steps"].as_array().unwrap();
    assert_eq!(
        steps[1]["uses"],
        format!("{}@v{version}", ctx_core::ci::ACTION_REPOSITORY)
    );
    assert_eq!(steps[1]["with"]["working-directory"], "repo");
    // The inputs it passes are inputs the action declares.
    let action = yaml("action.yml");
    for step in &steps[1..] {
        for key in step["with"].as_object().unwrap().keys() {
            assert!(
                action["inputs"].get(key).is_some(),
                "action.yml has no input `{key}`"
            );
        }
    }
    // Run again: the workflow is kept unless --force.
    let again = ctx(tmp.path(), &["init", "repo", "--yes", "--ci", "github"]);
    assert!(
        again
            .stdout
            .contains("kept     .github/workflows/context.yml"),
        "{}",
        again.stdout
    );
}

#[test]
fn every_command_the_ci_files_run_exists_and_passes_on_a_new_repository() {
    let tmp = tempfile::tempdir().unwrap();
    init_repo(tmp.path());
    let repo = tmp.path().join("repo");
    let workflow = ctx_core::yaml::parse(
        &std::fs::read_to_string(repo.join(".github/workflows/context.yml")).unwrap(),
    )
    .unwrap();
    let commands = ci_commands(&workflow);
    assert!(commands.len() >= 6, "{commands:?}");
    for command in commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        let sub: Vec<&str> = words
            .iter()
            .take_while(|w| !w.starts_with('-'))
            .copied()
            .collect();
        let mut help_args = sub.clone();
        help_args.push("--help");
        let help = ctx(&repo, &help_args);
        assert_eq!(
            help.code,
            0,
            "`ctx {}` does not exist: {}",
            sub.join(" "),
            help.stderr
        );
        for flag in words.iter().filter(|w| w.starts_with("--")) {
            assert!(
                help.stdout.contains(flag),
                "`ctx {}` has no flag {flag}",
                sub.join(" ")
            );
        }
        let r = ctx(&repo, &words);
        assert_eq!(
            r.code, 0,
            "`ctx {command}` fails on a new repository:\n{}{}",
            r.stdout, r.stderr
        );
    }
}

#[test]
fn pre_commit_offers_system_variants_of_every_hook() {
    let hooks = yaml(".pre-commit-hooks.yaml");
    let hooks = hooks.as_array().unwrap();
    let ids: Vec<&str> = hooks.iter().map(|h| h["id"].as_str().unwrap()).collect();
    for h in hooks.iter().filter(|h| h["language"] == "rust") {
        let id = h["id"].as_str().unwrap();
        let system = hooks
            .iter()
            .find(|s| s["id"] == format!("{id}-system"))
            .unwrap_or_else(|| panic!("no {id}-system among {ids:?}"));
        assert_eq!(system["language"], "system");
        assert_eq!(system["entry"], h["entry"]);
        assert_eq!(system["pass_filenames"], h["pass_filenames"]);
    }
}

#[test]
fn local_ci_needs_no_cross_targets() {
    let ci = std::fs::read_to_string(project_root().join(".ci/run")).unwrap();
    for word in [
        "--target",
        "musl",
        "rustup target",
        "cargo dist",
        "dist build",
    ] {
        assert!(!ci.contains(word), ".ci/run must not depend on `{word}`");
    }
}

/// Run the action's two steps for real on this machine, with `curl` replaced by a
/// copy from a local "release" folder: the archive is verified, unpacked, put on
/// PATH, and runs the command; a tampered archive is refused and nothing installed.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn the_action_installs_a_verified_binary_and_runs_the_command() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let target = "x86_64-unknown-linux-musl";
    let archive = format!("ctx-{target}.tar.gz");
    // A release folder: the archive and its sums.
    let release = t.join("release");
    let pkg = release.join(format!("ctx-{target}"));
    std::fs::create_dir_all(&pkg).unwrap();
    // A stand-in that runs the ctx under test (the debug binary is too big to pack quickly).
    std::fs::write(
        pkg.join("ctx"),
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", env!("CARGO_BIN_EXE_ctx")),
    )
    .unwrap();
    std::fs::set_permissions(pkg.join("ctx"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tar = Command::new("tar")
        .current_dir(&release)
        .args(["-czf", &archive, &format!("ctx-{target}")])
        .status();
    if !tar.is_ok_and(|s| s.success()) {
        eprintln!("note: tar is absent; skipping");
        return;
    }
    std::fs::remove_dir_all(&pkg).unwrap();
    let sums = Command::new("sha256sum")
        .current_dir(&release)
        .arg(&archive)
        .output()
        .unwrap();
    std::fs::write(release.join("SHA256SUMS"), &sums.stdout).unwrap();
    // `curl ... -o FILE URL -o FILE URL`: copy each URL's file name from `release`.
    let bin = t.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake_curl = format!(
        "#!/bin/bash\nset -e\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = -o ]; then cp \"{}/$(basename \"$3\")\" \"$2\"; shift 3; else shift; fi\ndone\n",
        release.display()
    );
    std::fs::write(bin.join("curl"), fake_curl).unwrap();
    std::fs::set_permissions(bin.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();

    let action = yaml("action.yml");
    let steps = run_scripts(&action, &["runs", "steps"]);
    let install = |case: &str| {
        let dir = t.join(case);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::create_dir_all(dir.join("cache")).unwrap();
        let out = Command::new("bash")
            .args(["-c", &without_expressions(&steps[0])])
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("RUNNER_TEMP", dir.join("tmp"))
            .env("RUNNER_TOOL_CACHE", dir.join("cache"))
            .env("GITHUB_ACTION_PATH", project_root())
            .env("GITHUB_PATH", dir.join("path"))
            .env("GITHUB_OUTPUT", dir.join("output"))
            .env("CTX_VERSION", "")
            .env("CTX_REPOSITORY", "owner/ctx")
            .env("CTX_ACTION_REPOSITORY", "")
            .output()
            .unwrap();
        (dir, out)
    };
    let (dir, out) = install("good");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let on_path = std::fs::read_to_string(dir.join("path")).unwrap();
    let installed = Path::new(on_path.trim()).join("ctx");
    assert!(installed.is_file(), "{}", installed.display());
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        on_path.contains(&format!("ctx/{version}/{target}")),
        "{on_path}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("output")).unwrap(),
        format!("version={version}\n")
    );
    // The run step, with the installed ctx first on PATH.
    init_repo(t);
    let run = Command::new("bash")
        .args(["-c", &without_expressions(&steps[1])])
        .current_dir(t.join("repo"))
        .env(
            "PATH",
            format!("{}:{}", on_path.trim(), std::env::var("PATH").unwrap()),
        )
        .env(
            "CTX_COMMAND",
            "resolve --role support --task \"refund request\" --explain",
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("Resolved for role `support`"), "{stdout}");

    // A tampered archive: the sums no longer match, nothing is installed.
    std::fs::write(
        release.join("SHA256SUMS"),
        format!("{}  {archive}\n", "0".repeat(64)),
    )
    .unwrap();
    let (dir, out) = install("tampered");
    assert!(!out.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("FAILED"), "{said}");
    assert!(!dir.join("path").exists());
    assert!(!dir
        .join(format!("cache/ctx/{version}/{target}/ctx"))
        .exists());
}
