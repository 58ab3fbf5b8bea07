//! Commands that describe ctx itself: version, schema, completions, man pages.

use crate::support::{ctx, project_root};

#[test]
fn version_names_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(dir.path(), &["version"]);
    assert_eq!(r.code, 0);
    assert!(
        r.stdout.contains("OpenContext specification 1.0"),
        "{}",
        r.stdout
    );
}

#[test]
fn schema_lists_and_prints_embedded_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let list = ctx(dir.path(), &["schema"]);
    for kind in [
        "manifest",
        "object",
        "role",
        "provenance",
        "decision",
        "diagnostic",
        "bundle",
        "audit-event",
    ] {
        assert!(list.stdout.contains(kind), "{}", list.stdout);
    }
    let one = ctx(dir.path(), &["schema", "object"]);
    assert_eq!(one.code, 0);
    assert!(one.json().is_object());
    assert_eq!(ctx(dir.path(), &["schema", "nope"]).code, 3);
}

#[test]
fn completions_for_each_shell() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let r = ctx(dir.path(), &["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        assert!(
            r.stdout.contains("doctor") && r.stdout.contains("supersede"),
            "{shell} lacks subcommands"
        );
    }
    assert_eq!(ctx(dir.path(), &["completions", "tcsh"]).code, 2);
}

/// man/*.1 are checked in; regenerate with `UPDATE_MAN=1 cargo test --test cli man_pages`.
#[test]
fn man_pages_are_current() {
    let tmp = tempfile::tempdir().unwrap();
    let r = ctx(tmp.path(), &["__generate-man", "pages"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let generated = tmp.path().join("pages");
    let man = project_root().join("man");
    if std::env::var_os("UPDATE_MAN").is_some() {
        let _ = std::fs::remove_dir_all(&man);
        std::fs::create_dir_all(&man).unwrap();
        for e in std::fs::read_dir(&generated).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, man.join(p.file_name().unwrap())).unwrap();
        }
    }
    let list = |d: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".1"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        list(&man),
        list(&generated),
        "man/ is stale: run UPDATE_MAN=1 cargo test --test cli man_pages"
    );
    for name in list(&generated) {
        assert_eq!(
            std::fs::read(man.join(&name)).unwrap(),
            std::fs::read(generated.join(&name)).unwrap(),
            "man/{name} is stale: run UPDATE_MAN=1 cargo test --test cli man_pages"
        );
    }
    let doctor = std::fs::read_to_string(man.join("ctx-doctor.1")).unwrap();
    assert!(
        doctor.contains("deduction = sum(weight[code] x occurrences) / max(objects, 1)"),
        "the score formula is in the man page"
    );
    assert!(
        !list(&man).iter().any(|n| n.contains("__generate")),
        "hidden commands have no page"
    );
}

/// Every command, subcommand, argument and flag says what it is for: walked from
/// `ctx --help` down, no entry of a `--help` page has an empty description.
#[test]
fn every_command_and_flag_has_a_description() {
    let dir = tempfile::tempdir().unwrap();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    let mut empty = Vec::new();
    let mut pages = 0;
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let r = ctx(dir.path(), &args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        pages += 1;
        let lines: Vec<&str> = r.stdout.lines().collect();
        let mut in_commands = false;
        for (n, line) in lines.iter().enumerate() {
            if line.ends_with(':') && !line.starts_with(' ') {
                in_commands = *line == "Commands:";
                continue;
            }
            let entry = line.starts_with("  ") && !line.starts_with("   ");
            if in_commands && entry {
                let name = line.split_whitespace().next().unwrap_or("");
                if name != "help" {
                    let mut sub = path.clone();
                    sub.push(name.to_string());
                    todo.push(sub);
                }
                if line.split_whitespace().count() < 2 {
                    empty.push(format!("{path:?}: {line}"));
                }
                continue;
            }
            // An argument or flag entry: its description is on the same line (after
            // two spaces) or on the next, more indented line.
            let spec = line.trim_start();
            if entry && (spec.starts_with('-') || spec.starts_with('<')) {
                let inline = spec.split("  ").skip(1).any(|t| !t.trim().is_empty());
                let next = lines.get(n + 1).copied().unwrap_or("");
                let below = next.starts_with("          ") && !next.trim().is_empty();
                if !inline && !below {
                    empty.push(format!("{path:?}: {spec}"));
                }
            }
        }
    }
    assert!(pages > 40, "walked {pages} help pages");
    assert!(
        empty.is_empty(),
        "entries without a description:\n{}",
        empty.join("\n")
    );
}
