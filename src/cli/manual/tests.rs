//! The man-page sections stay true: every example parses, sits on its own page, and
//! every visible command has some.

use super::*;
use clap::{CommandFactory, Parser};

/// Split a command line like a shell would for these examples (double quotes only).
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
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

fn paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(prefix.clone());
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() == "help" {
                continue;
            }
            let mut p = prefix.clone();
            p.push(sub.get_name().to_string());
            walk(sub, p, out);
        }
    }
    let mut out = Vec::new();
    walk(&crate::cli::Cli::command(), Vec::new(), &mut out);
    out
}

#[test]
fn every_example_parses_and_belongs_to_its_page() {
    for path in paths() {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        for (line, _) in examples(&path) {
            let argv = words(line);
            assert_eq!(argv[0], "ctx", "{line}");
            if let Err(e) = crate::cli::Cli::try_parse_from(&argv) {
                panic!("man page example `{line}` does not parse:\n{e}");
            }
            // The page of `ctx keys` may show `ctx keys generate`; never another command.
            let named: Vec<&str> = argv[1..]
                .iter()
                .map(String::as_str)
                .filter(|w| !w.starts_with('-'))
                .take(path.len())
                .collect();
            if !path.is_empty() {
                assert_eq!(
                    named[0],
                    path[0],
                    "`{line}` is on the page of `ctx {}`",
                    path.join(" ")
                );
            }
        }
    }
}

#[test]
fn every_visible_command_has_examples() {
    let missing: Vec<String> = paths()
        .into_iter()
        .filter(|p| {
            let p: Vec<&str> = p.iter().map(String::as_str).collect();
            examples(&p).is_empty()
        })
        .map(|p| format!("ctx {}", p.join(" ")))
        .collect();
    assert!(
        missing.is_empty(),
        "add EXAMPLES for these commands in src/cli/manual/: {missing:?}"
    );
}

#[test]
fn roff_escaping() {
    assert_eq!(roff("a-b \\ c"), "a\\-b \\e c");
    assert_eq!(roff(".hidden"), "\\&.hidden");
    let page = ".TH x 1\n.SH OPTIONS\n.SH VERSION\nv1\n";
    let out = add_sections(page, &["fmt"]);
    let ex = out.find(".SH EXAMPLES").unwrap();
    assert!(out.find(".SH OPTIONS").unwrap() < ex);
    assert!(ex < out.find(".SH FILES").unwrap());
    assert!(out.find(".SH FILES").unwrap() < out.find(".SH VERSION").unwrap());
}
