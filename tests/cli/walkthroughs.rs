//! The guides' walkthroughs run verbatim: every ```sh block a guide marks with
//! `<!-- walkthrough: NAME -->` is joined, in order, into one bash script that runs
//! in an empty folder with a fresh home and `ctx` on PATH, as a new user would copy
//! them. A walkthrough that no longer works fails here, not on a user's machine.
//! Each run's time is printed: the time to first success the docs promise.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::support::hermetic::Home;
use crate::support::runner::CTX;
use crate::support::{git::have_git, project_root};

/// Walkthrough name → its script, from the marked blocks of `doc`.
fn walkthroughs(doc: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(project_root().join(doc)).unwrap();
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut pending: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("<!-- walkthrough: ") {
            pending = Some(rest.trim_end_matches("-->").trim().to_string());
            continue;
        }
        if line.starts_with("```") {
            let name = pending.take();
            let mut body = String::new();
            for l in lines.by_ref() {
                if l.starts_with("```") {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            if let Some(name) = name {
                assert_eq!(
                    line, "```sh",
                    "{doc}: walkthrough `{name}` marks a non-sh block"
                );
                out.entry(name).or_default().push_str(&body);
            }
        } else if !line.trim().is_empty() {
            pending = None;
        }
    }
    out
}

/// Run `script` as a new user would: bash, an empty folder, a fresh home, `ctx` on PATH.
fn run(doc: &str, name: &str, script: &str) {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    let bin = Path::new(CTX).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    home.apply(&mut cmd);
    cmd.env("PATH", path)
        // A person's git knows who they are.
        .env("GIT_AUTHOR_NAME", "Dana Okafor")
        .env("GIT_AUTHOR_EMAIL", "dana@example.com")
        .env("GIT_COMMITTER_NAME", "Dana Okafor")
        .env("GIT_COMMITTER_EMAIL", "dana@example.com")
        .current_dir(dir.path())
        .args(["-euo", "pipefail", "-c", script])
        .stdin(std::process::Stdio::null());
    let started = Instant::now();
    let out = cmd.output().expect("bash runs");
    eprintln!(
        "walkthrough {doc}#{name}: {:.1}s to first success",
        started.elapsed().as_secs_f64()
    );
    assert!(
        out.status.success(),
        "{doc} walkthrough `{name}` failed ({}):\n--- script\n{script}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_exchange_walkthrough_runs_verbatim() {
    if !have_git() {
        return;
    }
    let all = walkthroughs("docs/exchange.md");
    let script = all
        .get("exchange")
        .expect("docs/exchange.md marks its walkthrough");
    run("docs/exchange.md", "exchange", script);
}

#[test]
fn the_vault_walkthrough_runs_verbatim() {
    let all = walkthroughs("docs/personal.md");
    let script = all
        .get("vault")
        .expect("docs/personal.md marks its walkthrough");
    run("docs/personal.md", "vault", script);
}

#[test]
fn a_marked_block_that_fails_is_reported() {
    // The runner can fail: a broken step stops the walkthrough.
    let r = std::panic::catch_unwind(|| run("test", "broken", "ctx validate --no-such-flag\n"));
    assert!(r.is_err());
}
