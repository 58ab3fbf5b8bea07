//! Output into pipes: a closed reader ends ctx quietly, and no progress line
//! or escape code reaches a stream that is not a terminal.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::support::fixtures::healthy;
use crate::support::Repo;

/// `ctx list | head -1`: the reader goes away; ctx exits 0 without a word on stderr.
#[test]
fn closed_pipe_exits_quietly() {
    let mut files: Vec<(String, String)> = vec![(
        "opencontext.yaml".into(),
        "opencontext: \"1.0\"\nid: big\ncollections:\n  notes: ./context/notes/**\n".into(),
    )];
    for n in 0..3000 {
        files.push((
            format!("context/notes/n{n:05}.md"),
            format!(
                "---\nid: notes.n{n:05}\ntype: note\nowner: someone-with-a-long-name\n---\nx\n"
            ),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let repo = Repo::new(&refs);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctx"))
        .current_dir(repo.path())
        .args(["list"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the pipe closes with most of the output unread.
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with("id"), "{first}");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    // And through a real shell pipeline.
    let sh = Command::new("sh")
        .current_dir(repo.path())
        .arg("-c")
        .arg(format!(
            "'{}' list | head -1 >/dev/null; echo \"status $?\"",
            env!("CARGO_BIN_EXE_ctx")
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&sh.stdout), "status 0\n");
    assert_eq!(String::from_utf8_lossy(&sh.stderr), "");
}

/// Long runs show progress only on a terminal: piped stderr never gets escape codes.
#[test]
fn no_progress_line_when_stderr_is_not_a_terminal() {
    let repo = healthy();
    for args in [&["doctor"][..], &["doctor", "--format", "json"][..]] {
        let r = repo.ctx(args);
        assert!(
            !r.stderr.contains('\r') && !r.stderr.contains("\x1b["),
            "{:?}",
            r.stderr
        );
        assert!(
            !r.stdout.contains('\r') && !r.stdout.contains("\x1b["),
            "{:?}",
            r.stdout
        );
    }
}
