//! The man pages' EXAMPLES are real: read them from the checked-in pages and run
//! them against a fresh `ctx init` repository (one per example, so no example
//! depends on another).

use std::path::Path;

use crate::support::{ctx, ctx_env, project_root};

/// (page, command line) of every example in man/*.1, roff escapes undone.
fn man_examples() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pages: Vec<_> = std::fs::read_dir(project_root().join("man"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "1"))
        .collect();
    pages.sort();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let Some(start) = text.find(".SH EXAMPLES\n") else {
            continue;
        };
        let section = &text[start..];
        let section = &section[..section[1..].find("\n.SH ").map_or(section.len(), |i| i + 1)];
        let mut lines = section.lines();
        while let Some(l) = lines.next() {
            if l == ".TP" {
                let cmd = lines.next().unwrap();
                let cmd = cmd
                    .trim_start_matches("\\fB")
                    .trim_end_matches("\\fR")
                    .replace("\\-", "-")
                    .replace("\\&", "")
                    .replace("\\e", "\\");
                out.push((name.clone(), cmd));
            }
        }
    }
    out
}

/// Split on spaces, honouring double quotes.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in line.chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// Examples that need what a fresh repository does not have (other files, keys,
/// history, a private collection), with why.
const NOT_RUN: [(&str, &str); 20] = [
    (
        "ctx conformance",
        "needs the official fixtures beside the project",
    ),
    ("ctx audit", "needs an audit-enabled manifest"),
    ("ctx provider", "needs a binding, a key and a trust file"),
    (
        "ctx private",
        "needs a private collection and an age identity",
    ),
    ("ctx verify", "needs a signed bundle"),
    (
        "ctx keys",
        "writes keys into the user's configuration folder",
    ),
    (
        "ctx bundle --agent support-agent --task \"refund\" --sign",
        "needs a declared key",
    ),
    (
        "ctx diff pricing.enterprise",
        "needs two versions of an object",
    ),
    ("ctx diff --rev", "needs a branch or tag"),
    (
        "ctx receipts show",
        "needs a receipt id from an earlier step",
    ),
    (
        "ctx receipts supersede",
        "needs a receipt id from an earlier step",
    ),
    (
        "ctx proposals show",
        "needs a proposal id from an earlier step",
    ),
    (
        "ctx proposals approve",
        "needs a proposal id from an earlier step",
    ),
    (
        "ctx proposals reject",
        "needs a proposal id from an earlier step",
    ),
    (
        "ctx proposals expire",
        "needs a proposal id from an earlier step",
    ),
    (
        "ctx proposals commit",
        "needs a proposal id from an earlier step",
    ),
    (
        "ctx serve --listen",
        "serves a personal vault until stopped (tests/cli/serve_*.rs drive it)",
    ),
    (
        "ctx init --template personal",
        "needs a password file (tests/cli/personal.rs runs it)",
    ),
    (
        "ctx export --target agents-md --role support --per-folder",
        "needs extensions.ctx.export.folders (tests/cli/export_folders.rs runs it)",
    ),
    (
        "ctx mcp -C vault",
        "serves a personal vault (tests/cli/mcp_personal.rs drives it)",
    ),
];

/// Examples whose success exit status is not 0 in a fresh repository.
const EXPECT: [(&str, i32); 6] = [
    // AGENTS.md has not been written yet: --check says so.
    ("ctx export --target agents-md --role support --check", 1),
    // A team repository is no vault: serve and approvals refuse it as a usage error.
    ("ctx serve", 2),
    ("ctx approvals list", 2),
    ("ctx approvals approve apr_cdab9165", 2),
    (
        "ctx approvals approve apr_cdab9165 --confirm identity.ssn",
        2,
    ),
    ("ctx approvals deny apr_cdab9165", 2),
];

fn git(dir: &Path, args: &[&str]) -> bool {
    std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn man_page_examples_run() {
    let examples = man_examples();
    assert!(examples.len() >= 40, "{} examples", examples.len());
    let has_git = git(Path::new("."), &["--version"]);
    let mut ran = 0;
    for (page, line) in &examples {
        if NOT_RUN.iter().any(|(prefix, _)| line.starts_with(prefix)) {
            continue;
        }
        let needs_git = line.contains("--staged")
            || line.starts_with("ctx hook")
            || line.starts_with("ctx history");
        if needs_git && !has_git {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let dir = if line.starts_with("ctx init") {
            std::fs::create_dir_all(&repo).unwrap();
            repo.clone()
        } else {
            let r = ctx(tmp.path(), &["init", "repo", "--yes"]);
            assert_eq!(r.code, 0, "{}", r.stderr);
            if needs_git {
                assert!(git(&repo, &["init", "-q"]));
                assert!(git(&repo, &["add", "-A"]));
                assert!(git(&repo, &["commit", "-qm", "init"]));
            }
            repo.clone()
        };
        let config = tmp.path().join("config");
        if crate::exchange_examples::needs_exchange(line) {
            crate::exchange_examples::prepare(&dir, &config);
        }
        let argv = words(line);
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let r = ctx_env(
            &dir,
            &args,
            &[("XDG_CONFIG_HOME", config.to_str().unwrap())],
        );
        let want = EXPECT
            .iter()
            .find(|(l, _)| l == line)
            .map_or(0, |(_, c)| *c);
        assert_eq!(
            r.code, want,
            "{page}: `{line}` exited {}\nstdout:\n{}\nstderr:\n{}",
            r.code, r.stdout, r.stderr
        );
        ran += 1;
    }
    assert!(
        ran * 3 >= examples.len() * 2,
        "only {ran} of {} examples ran",
        examples.len()
    );
}

#[test]
fn every_page_has_files_and_the_skips_are_still_examples() {
    let man = project_root().join("man");
    for e in std::fs::read_dir(&man).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.contains("\n.SH FILES\n"),
            "{} has no FILES",
            p.display()
        );
    }
    let examples = man_examples();
    for (prefix, why) in NOT_RUN {
        assert!(
            examples.iter().any(|(_, l)| l.starts_with(prefix)),
            "NOT_RUN lists `{prefix}` ({why}) but no example starts with it"
        );
    }
    for (line, _) in EXPECT {
        assert!(
            examples.iter().any(|(_, l)| l == line),
            "`{line}` is no longer an example"
        );
    }
}
