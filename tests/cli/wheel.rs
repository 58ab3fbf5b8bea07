//! The PyPI wheel (pyproject.toml: maturin, `bindings = "bin"`) built here and used
//! the ways people use it: pip installs it into a fresh virtual environment and its
//! `ctx` runs; pre-commit installs it for the `language: python` hooks (the mirror
//! repository of packaging/pre-commit/, and a `repo: local` hook) and they check a
//! repository.
//!
//! maturin builds with the dev profile into its own artifact folder while sharing this
//! build's intermediate one (cargo's build-dir): it reuses every compiled dependency,
//! and never replaces target/debug/ctx under the tests that run it. maturin and
//! pre-commit come from .venv-dist (.ci/run installs them); without them these tests
//! skip with a note, and fail under CTX_REQUIRE_INTEROP=1. No network: pip installs
//! from local folders only (PIP_NO_INDEX).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;

use crate::support::git::{git, have_git};
use crate::support::hermetic::{self, Home};
use crate::support::{ctx, project_root};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `bin` folder of the virtual environment holding maturin and pre-commit:
/// `$CTX_DIST_VENV/bin`, else `.venv-dist/bin`; None (a skip, or a failure under
/// CTX_REQUIRE_INTEROP=1) when `tool` is not in it.
#[track_caller]
fn dist_venv(tool: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("CTX_DIST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join(".venv-dist"));
    let bin = venv.join("bin");
    if bin.join(tool).is_file() && bin.join("python").is_file() {
        return Some(bin);
    }
    assert!(
        std::env::var("CTX_REQUIRE_INTEROP").as_deref() != Ok("1"),
        "CTX_REQUIRE_INTEROP=1 but {} is missing (.ci/run installs maturin and pre-commit there)",
        bin.join(tool).display()
    );
    eprintln!(
        "note: {} is absent; skipping (python3 -m venv .venv-dist && \
         .venv-dist/bin/pip install maturin==1.16.0 pre-commit==4.7.0)",
        bin.join(tool).display()
    );
    None
}

/// The wheel, built once for the whole test binary.
fn wheel(bin: &Path) -> &'static Path {
    static WHEEL: OnceLock<PathBuf> = OnceLock::new();
    WHEEL.get_or_init(|| build_wheel(bin))
}

fn build_wheel(bin: &Path) -> PathBuf {
    // This test binary is <build-dir>/debug/deps/cli-*: maturin's cargo shares that build-dir.
    let exe = std::env::current_exe().unwrap();
    let build_dir = exe.ancestors().nth(3).unwrap().to_path_buf();
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("wheel");
    let out = work.join("dist");
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = Command::new(bin.join("maturin"));
    cmd.current_dir(project_root())
        .args(["build", "--profile", "dev", "--locked", "--manifest-path"])
        .arg(project_root().join("Cargo.toml"))
        .arg("--out")
        .arg(&out)
        .env("CARGO_TARGET_DIR", work.join("target"));
    if std::env::var_os("CARGO_BUILD_BUILD_DIR").is_none() {
        cmd.env("CARGO_BUILD_BUILD_DIR", &build_dir);
    }
    // What cargo sets for this test process only: build scripts that watch one of these
    // (ring watches CARGO_MANIFEST_DIR) would rebuild, and then rebuild again for the
    // next plain `cargo build`.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name == "CARGO"
            || name == "CARGO_CRATE_NAME"
            || name == "CARGO_PRIMARY_PACKAGE"
            || name == "CARGO_TARGET_TMPDIR"
            || ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_"]
                .iter()
                .any(|p| name.starts_with(p))
        {
            cmd.env_remove(&*name);
        }
    }
    let started = Instant::now();
    let built = cmd.output().expect("maturin runs");
    assert!(
        built.status.success(),
        "maturin build failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    eprintln!(
        "note: maturin built the wheel in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    wheels.into_iter().next().unwrap()
}

/// `program args` in `dir` in the hermetic environment with `home`, plus `env`.
fn run(home: &Home, dir: &Path, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(program);
    hermetic::apply(&mut cmd, home.path());
    cmd.current_dir(dir).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()))
}

#[track_caller]
fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[cfg(unix)]
#[test]
fn the_wheel_installs_ctx_into_a_virtual_environment() {
    let Some(bin) = dist_venv("maturin") else {
        return;
    };
    let wheel = wheel(&bin);
    let name = wheel.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with(&format!("ctx_opencontext-{VERSION}-py3-none-")),
        "{name}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new();
    let started = Instant::now();
    // A bare environment, filled by the pip beside maturin: seeding it with its own pip
    // would triple the time.
    let python = bin.join("python");
    let venv = tmp.path().join("venv");
    let venv_python = venv.join("bin/python");
    ok(&run(
        &home,
        tmp.path(),
        &python,
        &["-m", "venv", "--without-pip", "venv"],
        &[],
    ));
    ok(&run(
        &home,
        tmp.path(),
        &python,
        &[
            "-m",
            "pip",
            "--python",
            venv_python.to_str().unwrap(),
            "install",
            "--no-index",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            wheel.to_str().unwrap(),
        ],
        &[],
    ));
    eprintln!(
        "note: a new venv and pip install of the wheel took {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // The installed command is ctx, this version, and it works on a new repository.
    let ctx_bin = venv.join("bin/ctx");
    let version = ok(&run(&home, tmp.path(), &ctx_bin, &["--version"], &[]));
    assert_eq!(version, format!("ctx {VERSION}\n"));
    ok(&run(
        &home,
        tmp.path(),
        &ctx_bin,
        &["init", "repo", "--yes"],
        &[],
    ));
    let checked = ok(&run(
        &home,
        tmp.path(),
        &ctx_bin,
        &["validate", "--strict", "-C", "repo"],
        &[],
    ));
    assert!(checked.contains("valid: 0 errors"), "{checked}");

    // The wheel holds the binary and its metadata, and no Python code.
    let lib = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let info = lib.join(format!("site-packages/ctx_opencontext-{VERSION}.dist-info"));
    let metadata = std::fs::read_to_string(info.join("METADATA")).unwrap();
    assert!(metadata.contains("\nName: ctx-opencontext\n"), "{metadata}");
    assert!(
        metadata.contains(&format!("\nVersion: {VERSION}\n")),
        "{metadata}"
    );
    let record = std::fs::read_to_string(info.join("RECORD")).unwrap();
    for line in record.lines() {
        let path = line.split(',').next().unwrap();
        assert!(
            path.starts_with(&format!("ctx_opencontext-{VERSION}.dist-info/"))
                || path.ends_with("/bin/ctx"),
            "the wheel installs {path}"
        );
    }
    assert!(record.lines().any(|l| l.contains("/bin/ctx,")), "{record}");
}

/// pre-commit installs the wheel for both documented hook shapes, offline, and the
/// hooks run the packaged ctx: a valid repository passes, a broken reference fails.
#[cfg(unix)]
#[test]
fn pre_commit_python_hooks_install_the_wheel_and_check_the_repository() {
    let Some(bin) = dist_venv("pre-commit") else {
        return;
    };
    if !have_git() {
        return;
    }
    let wheel = wheel(&bin);
    let tmp = tempfile::tempdir().unwrap();
    let home = Home::new();

    // The mirror repository of this release, as the release job writes and tags it.
    let mirror = tmp.path().join("mirror");
    let render = project_root().join("packaging/pre-commit/render.sh");
    ok(&run(
        &home,
        tmp.path(),
        Path::new("sh"),
        &[render.to_str().unwrap(), VERSION, mirror.to_str().unwrap()],
        &[],
    ));
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", mirror.to_str().unwrap()],
    );
    git(&mirror, &["add", "-A"]);
    git(&mirror, &["commit", "-q", "-m", "ctx hooks"]);
    git(&mirror, &["tag", &format!("v{VERSION}")]);

    // A context repository that uses the mirror, and a local hook installing the same wheel.
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let init = ctx(&repo, &["init", ".", "--yes"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    let config = format!(
        "repos:\n  - repo: {}\n    rev: v{VERSION}\n    hooks:\n      - id: ctx-validate\n      - id: ctx-fmt\n  \
         - repo: local\n    hooks:\n      - id: ctx-validate-local\n        name: ctx validate (local hook)\n        \
         entry: ctx validate\n        language: python\n        additional_dependencies: [ctx-opencontext=={VERSION}]\n        \
         pass_filenames: false\n",
        mirror.display()
    );
    std::fs::write(repo.join(".pre-commit-config.yaml"), config).unwrap();
    git(&repo, &["add", "-A"]);

    // Offline: pip finds the wheel, and setuptools (the mirror's build backend) in the
    // wheels virtualenv (a dependency of pre-commit) carries.
    let embed = ok(&run(
        &home,
        tmp.path(),
        &bin.join("python"),
        &[
            "-c",
            "import os, virtualenv.seed.wheels.embed as e; print(os.path.dirname(e.__file__))",
        ],
        &[],
    ));
    let find_links = format!("{} {}", wheel.parent().unwrap().display(), embed.trim());
    let cache = home.path().join(".cache/pre-commit");
    let cache_str = cache.display().to_string();
    let app_data = format!("{}/virtualenv-app-data", env!("CARGO_TARGET_TMPDIR"));
    let env = [
        ("PIP_NO_INDEX", "1"),
        ("PIP_FIND_LINKS", find_links.as_str()),
        ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
        ("PRE_COMMIT_HOME", cache_str.as_str()),
        // virtualenv's unpacked seed wheels, kept between runs.
        ("VIRTUALENV_OVERRIDE_APP_DATA", app_data.as_str()),
    ];
    let pre_commit = bin.join("pre-commit");
    let started = Instant::now();
    let out = run(&home, &repo, &pre_commit, &["run", "--all-files"], &env);
    eprintln!(
        "note: pre-commit installed the two hook environments and ran in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let said = ok(&out);
    for hook in ["ctx validate", "ctx fmt", "ctx validate (local hook)"] {
        assert!(
            said.lines()
                .any(|l| l.starts_with(&format!("{hook}.")) && l.ends_with("Passed")),
            "{hook}:\n{said}"
        );
    }
    // Each hook environment holds the wheel's ctx.
    let installed: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .flat_map(|repo| {
            std::fs::read_dir(repo.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|env| env.path().join("bin/ctx"))
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(installed.len(), 2, "{installed:?}");

    // A broken reference is staged: both validate hooks fail on it.
    std::fs::write(
        repo.join("context/procedures/bad.md"),
        "---\nid: procedures.bad\ntype: procedure\nowner: support\nreferences: [nope.nothing]\n---\nx\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    let out = run(&home, &repo, &pre_commit, &["run", "--all-files"], &env);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("broken-reference") && said.contains("nope.nothing"),
        "{said}"
    );
    assert_eq!(
        said.lines().filter(|l| l.ends_with("Failed")).count(),
        2,
        "{said}"
    );
}
