//! Output into pipes: a closed reader ends ctx quietly, and no progress line
//! or escape code reaches a stream that is not a terminal.

use std::io::{BufRead, BufReader};

use crate::support::fixtures::healthy;
use crate::support::{ctx_in, Repo};

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
    let mut running = ctx_in(&repo).args(["list"]).spawn();
    let mut first = String::new();
    BufReader::new(running.child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the pipe closes with most of the output unread.
    let out = running.wait();
    assert!(first.starts_with("id"), "{first}");
    out.assert_ok();
    assert_eq!(out.stderr, "", "{}", out.describe());
    // And through a real shell pipeline.
    let sh = ctx_in(&repo).shell("\"$CTX\" list | head -1 >/dev/null; echo \"status $?\"");
    assert_eq!(sh.stdout, "status 0\n", "{}", sh.describe());
    assert_eq!(sh.stderr, "", "{}", sh.describe());
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
