//! Ways to a prebuilt ctx besides the GitHub Action (issue 31): the `cargo binstall`
//! metadata, the Homebrew formula, the pre-commit mirror and the release jobs that
//! make them are checked offline against the archive names the release workflow
//! publishes, and scripts/install.sh runs for real against a fake release in a local
//! folder (tests/cli/install_script.rs). The wheel itself is built and installed in
//! tests/cli/wheel.rs.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support::hermetic::{self, Home};
use crate::support::project_root;

pub(super) const VERSION: &str = env!("CARGO_PKG_VERSION");

pub(super) fn read(rel: &str) -> String {
    std::fs::read_to_string(project_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

pub(super) fn yaml(rel: &str) -> Value {
    ctx_core::yaml::parse(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn toml_file(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The archives a release publishes, from the workflow's build matrix: (target, extension).
pub(super) fn release_archives() -> Vec<(String, String)> {
    let doc = yaml(".github/workflows/release.yml");
    let mut out: Vec<(String, String)> = doc["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["target"].as_str().unwrap().to_string(),
                m["archive"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() >= 5, "{out:?}");
    out
}

/// Where a release asset is downloaded from.
pub(super) fn release_url(file: &str) -> String {
    format!(
        "https://github.com/{}/releases/download/v{VERSION}/{file}",
        ctx_core::ci::ACTION_REPOSITORY
    )
}

pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `sh SCRIPT ARGS` in the hermetic environment, with extra variables.
pub(super) fn sh(home: &Home, script: &str, args: &[&str], env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new("sh");
    hermetic::apply(&mut cmd, home.path());
    cmd.arg(project_root().join(script)).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("sh runs")
}

pub(super) fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

#[test]
fn binstall_metadata_points_at_the_release_archives() {
    let cargo: toml::Table = toml::from_str(&read("Cargo.toml")).unwrap();
    let meta = &cargo["package"]["metadata"]["binstall"];
    let overrides = meta.get("overrides").and_then(|o| o.as_table());
    let field = |target: &str, key: &str| -> String {
        overrides
            .and_then(|o| o.get(target))
            .and_then(|t| t.get(key))
            .or_else(|| meta.get(key))
            .and_then(|v| v.as_str())
            .unwrap_or_else(|| panic!("binstall has no {key} for {target}"))
            .to_string()
    };
    let render = |template: &str, target: &str| -> String {
        let exe = if target.contains("windows") {
            ".exe"
        } else {
            ""
        };
        let out = template
            .replace("{ version }", VERSION)
            .replace("{ target }", target)
            .replace("{ bin }", "ctx")
            .replace("{ binary-ext }", exe);
        assert!(
            !out.contains('{'),
            "a placeholder this test does not know: {template}"
        );
        out
    };
    // The workflow packs each binary as ctx-<target>/ctx[.exe] (its Package step).
    let doc = yaml(".github/workflows/release.yml");
    let package = doc["jobs"]["build"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "Package")
        .and_then(|s| s["run"].as_str())
        .expect("a Package step")
        .to_string();
    assert!(package.contains(r#"name="ctx-$TARGET""#), "{package}");
    assert!(
        package.contains(r#"cp "target/$TARGET/release/$exe" "dist/$name/""#),
        "{package}"
    );

    let archives = release_archives();
    for (target, ext) in &archives {
        let file = format!("ctx-{target}.{ext}");
        assert_eq!(
            render(&field(target, "pkg-url"), target),
            release_url(&file)
        );
        let exe = if ext == "zip" { "ctx.exe" } else { "ctx" };
        assert_eq!(
            render(&field(target, "bin-dir"), target),
            format!("ctx-{target}/{exe}")
        );
        let fmt = if ext == "zip" { "zip" } else { "tgz" };
        assert_eq!(field(target, "pkg-fmt"), fmt, "{target}");
    }
    // A target without an archive of its own (glibc Linux) is sent to an existing one.
    let extra: Vec<&String> = overrides
        .map(|o| {
            o.keys()
                .filter(|t| !archives.iter().any(|(a, _)| a == *t))
                .collect()
        })
        .unwrap_or_default();
    assert!(!extra.is_empty(), "glibc Linux overrides");
    for target in extra {
        let url = render(&field(target, "pkg-url"), target);
        let (archive, ext) = archives
            .iter()
            .find(|(t, e)| url == release_url(&format!("ctx-{t}.{e}")))
            .unwrap_or_else(|| panic!("{target}: {url} is no release archive"));
        assert_eq!(
            render(&field(target, "bin-dir"), target),
            format!("ctx-{archive}/ctx")
        );
        assert_eq!(field(target, "pkg-fmt"), "tgz", "{ext}");
    }
}

/// `"value"` of a line `key "value"`.
fn quoted<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.trim()
        .strip_prefix(key)?
        .trim()
        .strip_prefix('"')?
        .strip_suffix('"')
}

#[test]
fn the_homebrew_formula_names_each_archive_with_its_sum() {
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new();
    let files: Vec<String> = release_archives()
        .iter()
        .map(|(t, e)| format!("ctx-{t}.{e}"))
        .collect();
    let sums: String = files
        .iter()
        .map(|f| format!("{}  {f}\n", sha256_hex(f.as_bytes())))
        .collect();
    let sums_path = tmp.path().join("SHA256SUMS");
    std::fs::write(&sums_path, &sums).unwrap();
    let render = |sums: &Path| {
        sh(
            &home,
            "packaging/homebrew/render.sh",
            &[&format!("v{VERSION}"), sums.to_str().unwrap()],
            &[],
        )
    };
    let out = render(&sums_path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let formula = text(&out.stdout);
    assert!(formula.contains("class Ctx < Formula"), "{formula}");
    assert!(
        formula.contains(&format!("version \"{VERSION}\"")),
        "{formula}"
    );
    assert!(
        !formula.contains('@'),
        "an unfilled placeholder:\n{formula}"
    );
    // Each url is followed by the sum SHA256SUMS gives its file.
    let lines: Vec<&str> = formula.lines().collect();
    let mut named = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(url) = quoted(line, "url") else {
            continue;
        };
        let file = url.rsplit('/').next().unwrap();
        assert_eq!(url, release_url(file));
        let sha = quoted(lines[i + 1], "sha256").unwrap_or_else(|| panic!("no sha256 after {url}"));
        assert_eq!(sha, sha256_hex(file.as_bytes()), "{file}");
        named.push(file.to_string());
    }
    named.sort();
    let mut want: Vec<String> = files
        .iter()
        .filter(|f| f.ends_with(".tar.gz"))
        .cloned()
        .collect();
    want.sort();
    assert_eq!(named, want, "macOS and Linux, both CPUs");
    // Blocks balance; and Ruby itself agrees, where it is installed.
    let opened = lines
        .iter()
        .filter(|l| {
            let l = l.trim();
            !l.starts_with('#')
                && (l.ends_with(" do") || l.starts_with("class ") || l.starts_with("def "))
        })
        .count();
    let closed = lines.iter().filter(|l| l.trim() == "end").count();
    assert_eq!(opened, closed, "{formula}");
    let rb = tmp.path().join("ctx.rb");
    std::fs::write(&rb, &formula).unwrap();
    match Command::new("ruby").arg("-c").arg(&rb).output() {
        Ok(out) => assert!(
            out.status.success() && text(&out.stdout).contains("Syntax OK"),
            "ruby -c: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        ),
        Err(_) => eprintln!("note: ruby is absent; the formula was checked structurally only"),
    }

    // Fail closed: an archive missing from the sums, or a malformed sum, prints nothing.
    let missing = "ctx-aarch64-apple-darwin.tar.gz";
    let without: String = sums
        .lines()
        .filter(|l| !l.ends_with(missing))
        .map(|l| format!("{l}\n"))
        .collect();
    let short = sums.replacen(
        &sha256_hex(missing.as_bytes()),
        &sha256_hex(missing.as_bytes())[1..],
        1,
    );
    for (case, bad) in [("missing", without), ("short", short)] {
        let path = tmp.path().join(case);
        std::fs::write(&path, bad).unwrap();
        let out = render(&path);
        assert_eq!(out.status.code(), Some(1), "{case}");
        assert!(out.stdout.is_empty(), "{case}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains(missing),
            "{case}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn the_pre_commit_mirror_offers_every_hook_with_language_python() {
    let main = yaml(".pre-commit-hooks.yaml");
    let mirror = yaml("packaging/pre-commit/.pre-commit-hooks.yaml");
    let rust: Vec<&Value> = main
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["language"] == "rust")
        .collect();
    let mirror = mirror.as_array().unwrap();
    let ids = |hooks: &mut dyn Iterator<Item = &Value>| -> Vec<String> {
        hooks
            .map(|h| h["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&mut rust.iter().copied()), ids(&mut mirror.iter()));
    for hook in mirror {
        let own = rust.iter().find(|r| r["id"] == hook["id"]).unwrap();
        assert_eq!(hook["language"], "python", "{hook}");
        for key in ["name", "entry", "pass_filenames", "files"] {
            assert_eq!(hook[key], own[key], "{key} of {}", hook["id"]);
        }
    }

    // The root pyproject.toml builds the wheel the mirror pins.
    let root = toml_file(&project_root().join("pyproject.toml"));
    assert_eq!(
        root["build-system"]["requires"][0].as_str(),
        Some("maturin>=1,<2")
    );
    assert_eq!(
        root["build-system"]["build-backend"].as_str(),
        Some("maturin")
    );
    assert_eq!(root["tool"]["maturin"]["bindings"].as_str(), Some("bin"));
    assert_eq!(root["project"]["dynamic"][0].as_str(), Some("version"));
    let wheel = root["project"]["name"].as_str().unwrap();
    assert_eq!(wheel, "ctx-opencontext");

    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new();
    let out_dir = tmp.path().join("mirror");
    let dir = out_dir.to_str().unwrap();
    let out = sh(
        &home,
        "packaging/pre-commit/render.sh",
        &[&format!("v{VERSION}"), dir],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pyproject = toml_file(&out_dir.join("pyproject.toml"));
    assert_eq!(pyproject["project"]["version"].as_str(), Some(VERSION));
    let deps: Vec<&str> = pyproject["project"]["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(deps, [format!("{wheel}=={VERSION}")]);
    assert_eq!(
        std::fs::read_to_string(out_dir.join(".pre-commit-hooks.yaml")).unwrap(),
        read("packaging/pre-commit/.pre-commit-hooks.yaml")
    );
    let readme = std::fs::read_to_string(out_dir.join("README.md")).unwrap();
    assert!(readme.contains(&format!("rev: v{VERSION}")), "{readme}");
    assert!(
        readme.contains("repo: https://github.com/ctx-dev/ctx-pre-commit"),
        "{readme}"
    );
    assert!(!readme.contains('@'), "{readme}");
    // A malformed version writes nothing.
    let bad = tmp.path().join("bad");
    let out = sh(
        &home,
        "packaging/pre-commit/render.sh",
        &["1.0 beta", bad.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("is not a release version"),
        "{}",
        text(&out.stderr)
    );
    assert!(!bad.exists());
}

/// The docs that pin the wheel or a release pin this version (they go stale otherwise).
#[test]
fn docs_pin_the_current_release() {
    let mut pins = 0;
    for file in ["README.md", ".pre-commit-hooks.yaml", "packaging/README.md"] {
        let text = read(file);
        for marker in ["ctx-opencontext==", "ctx-pre-commit\n    rev: v"] {
            for rest in text.split(marker).skip(1) {
                let pin = rest
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
                    .next()
                    .unwrap();
                assert_eq!(pin.trim_end_matches('.'), VERSION, "{file}: {marker}{pin}");
                pins += 1;
            }
        }
    }
    assert!(
        pins >= 3,
        "the pre-commit configurations show a pinned version"
    );
}

#[test]
fn the_release_builds_wheels_for_every_platform_and_publishes_only_when_asked() {
    let doc = yaml(".github/workflows/release.yml");
    let jobs = &doc["jobs"];
    let matrix = jobs["wheels"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap();
    let wheel_targets: Vec<&str> = matrix
        .iter()
        .map(|m| m["target"].as_str().unwrap())
        .collect();
    for (target, _) in release_archives() {
        assert!(
            wheel_targets.contains(&target.as_str()),
            "no wheel for {target}"
        );
    }
    for m in matrix {
        let target = m["target"].as_str().unwrap();
        let tag = m["manylinux"].as_str();
        if target.ends_with("-linux-gnu") {
            assert_eq!(tag, Some("2_17"), "{target}");
        } else if target.ends_with("-linux-musl") {
            assert_eq!(tag, Some("musllinux_1_2"), "{target}");
        } else {
            assert_eq!(tag, None, "{target}");
        }
        if target.ends_with("-linux-musl") {
            let gnu = target.replace("-musl", "-gnu");
            assert!(
                wheel_targets.contains(&gnu.as_str()),
                "glibc Linux needs {gnu}"
            );
        }
    }
    let steps = jobs["wheels"]["steps"].as_array().unwrap();
    let build = steps
        .iter()
        .find(|s| s["uses"] == "PyO3/maturin-action@v1")
        .expect("maturin-action builds the wheel");
    assert!(build["with"]["args"]
        .as_str()
        .unwrap()
        .contains("--release --locked"));
    assert!(steps
        .iter()
        .any(|s| s["with"]["name"] == "wheel-${{ matrix.target }}"));

    // The release waits for every wheel and attaches them, the formula and the installer.
    let needs: Vec<&str> = jobs["publish"]["needs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for job in ["build", "wheels", "sdist"] {
        assert!(needs.contains(&job), "publish needs {job}");
    }
    let publish: String = jobs["publish"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    assert!(
        publish.contains("sh packaging/homebrew/render.sh \"$GITHUB_REF_NAME\" dist/SHA256SUMS")
    );
    assert!(publish.contains("scripts/install.sh > dist/install.sh"));

    // PyPI: trusted publishing (no token) from a protected environment, only when enabled.
    let pypi = &jobs["pypi"];
    assert_eq!(pypi["if"], "vars.PYPI_PUBLISH == 'true'");
    assert_eq!(pypi["environment"]["name"], "pypi");
    assert_eq!(pypi["permissions"]["id-token"], "write");
    let upload = pypi["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["uses"] == "pypa/gh-action-pypi-publish@release/v1")
        .expect("the PyPA publishing action");
    assert!(
        upload["with"].get("password").is_none(),
        "trusted publishing needs no token"
    );
    // The mirrors are opt-in, and the pre-commit mirror waits for the wheels on PyPI.
    assert_eq!(jobs["homebrew-tap"]["if"], "vars.HOMEBREW_TAP != ''");
    assert_eq!(
        jobs["pre-commit-mirror"]["if"],
        "vars.PRE_COMMIT_MIRROR != ''"
    );
    assert_eq!(jobs["pre-commit-mirror"]["needs"], "pypi");
    // Only the release job may write to this repository.
    for (name, job) in jobs.as_object().unwrap() {
        if name != "publish" {
            assert!(
                job["permissions"]
                    .get("contents")
                    .is_none_or(|c| c != "write"),
                "{name}"
            );
        }
    }
}

/// shellcheck, where it is installed (it is not part of CI's tools).
#[test]
fn the_shell_scripts_pass_shellcheck() {
    let scripts = [
        "scripts/install.sh",
        "packaging/homebrew/render.sh",
        "packaging/pre-commit/render.sh",
    ];
    let Ok(out) = Command::new("shellcheck")
        .args(["-s", "sh"])
        .args(scripts.map(|s| project_root().join(s)))
        .output()
    else {
        eprintln!("note: shellcheck is absent; skipping");
        return;
    };
    assert!(out.status.success(), "{}", text(&out.stdout));
}
