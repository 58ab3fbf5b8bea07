//! `ctx private edit` and `ctx private status`.

use std::path::PathBuf;

use super::{fixture, id_arg, keygen, read, run, PASSPORT};

#[test]
fn edit_goes_through_a_private_temporary_file() {
    let (repo, keys, alice) = fixture();
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let log = keys.path().join("editor.log");
    let script = keys.path().join("editor.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" > '{}'\nstat -c '%a' \"$(dirname \"$1\")\" >> '{}'\nstat -c '%a' \"$1\" >> '{}'\nsed -i 's/2031-05-01/2032-06-01/' \"$1\"\n",
            log.display(),
            log.display(),
            log.display()
        ),
    )
    .unwrap();
    let editor = format!("sh {}", script.display());
    let file = "private/vault/passport.md";
    let e = run(
        repo.path(),
        &["private", "edit", file, "-i", &id_arg(&alice)],
        &[("EDITOR", &editor), ("VISUAL", "")],
    );
    assert_eq!(e.code, 0, "{}{}", e.stdout, e.stderr);
    assert!(
        e.stderr.contains("saved private/vault/passport.md"),
        "{}",
        e.stderr
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    let mut lines = logged.lines();
    let tmp = PathBuf::from(lines.next().unwrap());
    assert_eq!(lines.next(), Some("700"), "{logged}");
    assert_eq!(lines.next(), Some("600"), "{logged}");
    assert!(
        !tmp.starts_with(repo.path().canonicalize().unwrap()),
        "{logged}"
    );
    assert!(
        !tmp.exists() && !tmp.parent().unwrap().exists(),
        "temporary plaintext removed"
    );
    let sealed = read(&repo, file);
    assert!(!sealed.contains("2032"), "{sealed}");
    let d = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &id_arg(&alice)],
        &[],
    );
    assert_eq!(d.stdout, PASSPORT.replace("2031-05-01", "2032-06-01"));

    // A new file inside the collection starts from a template and is born encrypted.
    let fresh = "private/vault/visa.md";
    let add = keys.path().join("add.sh");
    std::fs::write(
        &add,
        "#!/bin/sh\nprintf 'Visa valid until 2027.\\n' >> \"$1\"\n",
    )
    .unwrap();
    let editor = format!("sh {}", add.display());
    let e = run(
        repo.path(),
        &["private", "edit", fresh, "-i", &id_arg(&alice)],
        &[("EDITOR", &editor), ("VISUAL", "")],
    );
    assert_eq!(e.code, 0, "{}", e.stderr);
    assert!(read(&repo, fresh).contains("id: vault.visa") && !read(&repo, fresh).contains("2027"));
    assert_eq!(run(repo.path(), &["validate"], &[]).code, 0);

    // An invalid edit is not saved (no terminal to ask again), and nothing leaks.
    let bad = keys.path().join("bad.sh");
    std::fs::write(
        &bad,
        "#!/bin/sh\nprintf -- '---\\nid: [unclosed\\n---\\nbody\\n' > \"$1\"\n",
    )
    .unwrap();
    let before = read(&repo, file);
    let editor = format!("sh {}", bad.display());
    let e = run(
        repo.path(),
        &["private", "edit", file, "-i", &id_arg(&alice)],
        &[("EDITOR", &editor), ("VISUAL", "")],
    );
    assert_eq!(e.code, 1, "{}", e.stderr);
    assert!(e.stderr.contains("not saved"), "{}", e.stderr);
    assert_eq!(read(&repo, file), before);

    // Outside private collections, edit refuses.
    let e = run(
        repo.path(),
        &[
            "private",
            "edit",
            "context/mission.md",
            "-i",
            &id_arg(&alice),
        ],
        &[("EDITOR", "true")],
    );
    assert_eq!(e.code, 2, "{}", e.stderr);
    assert!(
        e.stderr.contains("not in a private collection"),
        "{}",
        e.stderr
    );
}

#[test]
fn status_lists_recipients_and_plaintext_by_mistake() {
    let (repo, keys, alice) = fixture();
    let st = run(repo.path(), &["private", "status"], &[]);
    assert_eq!(st.code, 1, "{}", st.stdout);
    assert!(
        st.stdout
            .contains("Private collection `vault` (./private/vault/**), 1 recipient(s):"),
        "{}",
        st.stdout
    );
    assert!(
        st.stdout
            .contains(&format!("  {}  [recipients[0]]", alice.public)),
        "{}",
        st.stdout
    );
    assert!(
        st.stdout.contains("PLAINTEXT  private/vault/passport.md"),
        "{}",
        st.stdout
    );
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let st = run(
        repo.path(),
        &["private", "status", "--check", "-i", &id_arg(&alice)],
        &[],
    );
    assert_eq!(st.code, 0, "{}{}", st.stdout, st.stderr);
    assert!(
        st.stdout
            .contains("ENCRYPTED  private/vault/passport.md  current; opens with"),
        "{}",
        st.stdout
    );
    let other = keygen(keys.path(), "other");
    let st = run(
        repo.path(),
        &[
            "private",
            "status",
            "--check",
            "-i",
            &id_arg(&other),
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(st.code, 1);
    let j = st.json();
    assert_eq!(j["files"][0]["state"], "unreadable");
    assert_eq!(
        j["collections"][0]["recipients"][0]["key"],
        alice.public.as_str()
    );
}
