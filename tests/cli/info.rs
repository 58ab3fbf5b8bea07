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
