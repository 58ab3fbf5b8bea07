//! Private collections are checked whole: nothing but the governance header
//! and one armored block may sit in an encrypted file; a killed `private
//! edit` leaves no plaintext behind for long; missing identities get one
//! exit code; errors never print plaintext.

use crate::private::{fixture, id_arg, read, run, Key};
use crate::support::Repo;

const FILE: &str = "private/vault/passport.md";

/// The fixture with its passport file encrypted.
fn sealed() -> (Repo, tempfile::TempDir, Key, String) {
    let (repo, keys, alice) = fixture();
    let r = run(repo.path(), &["private", "encrypt"], &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let text = read(&repo, FILE);
    (repo, keys, alice, text)
}

/// `validate` and `private status` both refuse `text` in place of the file;
/// `private status` does not print `secret` (validate's code frame shows
/// the offending line of the file, which is what has to be removed).
fn refused(repo: &Repo, rel: &str, text: &str, secret: &str, needle: &str) {
    repo.write(rel, text);
    let v = run(repo.path(), &["validate"], &[]);
    assert_eq!(v.code, 1, "validate accepted:\n{text}\n{}", v.stdout);
    assert!(v.stdout.contains(needle), "{needle}: {}", v.stdout);
    let s = run(repo.path(), &["private", "status"], &[]);
    assert_eq!(s.code, 1, "status accepted:\n{text}\n{}", s.stdout);
    assert!(s.stdout.contains("INVALID"), "{}", s.stdout);
    for out in [&s.stdout, &s.stderr] {
        assert!(!out.contains(secret), "{secret} printed: {out}");
    }
}

#[test]
fn plaintext_after_the_armored_block_is_refused() {
    let (repo, _k, _a, text) = sealed();
    refused(
        &repo,
        FILE,
        &format!("{text}\nPassport number X9999999\n"),
        "X9999999",
        "armored",
    );
    // Between two blocks, or inside the armor lines.
    let block = &text[text.find("-----BEGIN").unwrap()..];
    refused(
        &repo,
        FILE,
        &format!("{text}Notes X9999999\n{block}"),
        "X9999999",
        "armored",
    );
    let inside = text.replacen("-----END AGE", "Passport X9999999\n-----END AGE", 1);
    refused(&repo, FILE, &inside, "X9999999", "armored");
}

#[test]
fn extra_fields_and_comments_in_the_clear_header_are_refused() {
    let (repo, _k, _a, text) = sealed();
    refused(
        &repo,
        FILE,
        &text.replacen("type: fact\n", "type: fact\ntitle: passport X9999999\n", 1),
        "X9999999",
        "title",
    );
    refused(
        &repo,
        FILE,
        &text.replacen("type: fact\n", "type: fact\nnumber: X9999999\n", 1),
        "X9999999",
        "number",
    );
    refused(
        &repo,
        FILE,
        &text.replacen("type: fact\n", "type: fact # passport X9999999\n", 1),
        "X9999999",
        "comment",
    );
    refused(
        &repo,
        FILE,
        &text.replacen(
            "    encrypted: true\n",
            "    encrypted: true\n    note: X9999999\n",
            1,
        ),
        "X9999999",
        "note",
    );
    refused(
        &repo,
        FILE,
        &text.replacen("extensions:\n", "extensions:\n  acme.notes: X9999999\n", 1),
        "X9999999",
        "acme.notes",
    );
    // The original is fine again.
    repo.write(FILE, &text);
    assert_eq!(run(repo.path(), &["validate"], &[]).code, 0);
}

#[test]
fn yaml_members_are_checked_whole_too() {
    let (repo, _k, _a, _) = sealed();
    repo.write(
        "private/vault/bank.yaml",
        "id: vault.bank\ntype: fact\nowner: me\ncontent:\n  iban: DE00 1234\n",
    );
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let text = read(&repo, "private/vault/bank.yaml");
    assert_eq!(run(repo.path(), &["validate"], &[]).code, 0);
    refused(
        &repo,
        "private/vault/bank.yaml",
        &format!("{text}iban: DE99 9999\n"),
        "DE99",
        "iban",
    );
    refused(
        &repo,
        "private/vault/bank.yaml",
        &format!("{text}# iban DE99 9999\n"),
        "DE99",
        "comment",
    );
}

/// A field a collection lists under `clear:` may stay in clear; others may not.
#[test]
fn the_collection_clear_list_is_honoured() {
    let (repo, _k, alice, text) = sealed();
    let with_title = text.replacen("type: fact\n", "type: fact\ntitle: Passport details\n", 1);
    repo.write(FILE, &with_title);
    let v = run(repo.path(), &["validate"], &[]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains("`title`") && v.stdout.contains("clear"),
        "{}",
        v.stdout
    );
    let m = read(&repo, "opencontext.yaml").replace(
        &format!("        recipients: [\"{}\"]\n", alice.public),
        &format!(
            "        recipients: [\"{}\"]\n        clear: [title]\n",
            alice.public
        ),
    );
    repo.write("opencontext.yaml", &m);
    let v = run(repo.path(), &["validate"], &[]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    let s = run(repo.path(), &["private", "status"], &[]);
    assert_eq!(s.code, 0, "{}", s.stdout);
}

/// A `private edit` killed with SIGKILL leaves its plaintext folder; the
/// next ctx run removes it once that process is gone, and leaves folders
/// of live processes alone.
#[cfg(target_os = "linux")]
#[test]
fn a_killed_edit_leaves_plaintext_that_the_next_run_sweeps() {
    let (repo, keys, alice, _) = sealed();
    let runtime = keys.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let rt = runtime.to_str().unwrap();
    // The "editor" finds the ctx process above it (sh may or may not sit in
    // between) and kills it outright.
    let editor = keys.path().join("kill.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\np=$PPID\nwhile [ \"$p\" -gt 1 ]; do\n  if [ \"$(cat /proc/$p/comm)\" = ctx ]; then kill -9 \"$p\"; break; fi\n  p=$(awk '{print $4}' /proc/$p/stat)\ndone\nsleep 1\n",
    )
    .unwrap();
    let e = run(
        repo.path(),
        &["private", "edit", FILE, "-i", &id_arg(&alice)],
        &[
            ("EDITOR", &format!("sh {}", editor.display())),
            ("VISUAL", ""),
            ("XDG_RUNTIME_DIR", rt),
        ],
    );
    assert_ne!(e.code, 0, "{}", e.stderr);
    let left: Vec<_> = std::fs::read_dir(&runtime).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "the killed edit left its folder: {left:?}");
    let dir = left[0].path();
    let plain = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert!(
        std::fs::read_to_string(&plain)
            .unwrap()
            .contains("X1234567"),
        "plaintext was on disk"
    );
    // A folder of a live process (this test) is not touched.
    let mine = runtime.join(format!("ctx-edit-{}-keep", std::process::id()));
    std::fs::create_dir(&mine).unwrap();
    for cmd in [
        vec!["validate"],
        vec!["resolve", "--role", "owner"],
        vec!["private", "status"],
    ] {
        let r = run(repo.path(), &cmd, &[("XDG_RUNTIME_DIR", rt)]);
        assert!(r.code == 0 || r.code == 1, "{cmd:?}: {}", r.stderr);
        assert!(!dir.exists(), "{cmd:?} did not sweep {}", dir.display());
        assert!(mine.exists(), "{cmd:?} swept a live process's folder");
        // Leave another stale folder for the next command.
        let stale = runtime.join("ctx-edit-999999999-stale");
        let _ = std::fs::create_dir(&stale);
        std::fs::write(stale.join("passport.md"), "X1234567").unwrap();
        let _ = std::fs::rename(&stale, &dir);
    }
}

/// Every private command that needs an identity and has none exits 2 (a
/// usage error: give one), and so does a named identity file that does not
/// exist (`--identity`, `CTX_AGE_IDENTITY`), as `resolve` does.
#[test]
fn a_missing_identity_has_one_exit_code_everywhere() {
    let (repo, keys, _alice, _) = sealed();
    let missing = keys.path().join("nope.txt");
    let missing = missing.to_str().unwrap();
    let commands: [&[&str]; 4] = [
        &["private", "decrypt", FILE],
        &["private", "edit", FILE],
        &["private", "rekey"],
        &["private", "status", "--check"],
    ];
    for cmd in commands {
        let r = run(repo.path(), cmd, &[("EDITOR", "true"), ("VISUAL", "")]);
        assert_eq!(r.code, 2, "{cmd:?}: {}", r.stderr);
        assert!(r.stderr.contains("--identity"), "{cmd:?}: {}", r.stderr);
        let mut with: Vec<&str> = cmd.to_vec();
        with.extend(["--identity", missing]);
        let r = run(repo.path(), &with, &[("EDITOR", "true"), ("VISUAL", "")]);
        assert_eq!(r.code, 2, "{with:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("does not exist"),
            "{with:?}: {}",
            r.stderr
        );
        let r = run(
            repo.path(),
            cmd,
            &[
                ("EDITOR", "true"),
                ("VISUAL", ""),
                ("CTX_AGE_IDENTITY", missing),
            ],
        );
        assert_eq!(r.code, 2, "{cmd:?} with CTX_AGE_IDENTITY: {}", r.stderr);
    }
}

/// Parse errors in plaintext (a file about to be encrypted, a decrypted
/// copy) name the line, never the text.
#[test]
fn private_errors_never_print_plaintext() {
    let (repo, _k, alice) = fixture();
    // Plaintext that does not parse: a duplicate key whose text is secret.
    repo.write(
        FILE,
        "---\nid: vault.passport\ntype: fact\nX7777777: a\nX7777777: b\n---\nbody\n",
    );
    let r = run(repo.path(), &["private", "encrypt"], &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("line 5"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("X7777777") && !r.stdout.contains("X7777777"),
        "{}",
        r.stderr
    );
    // An editor that writes an invalid document: the complaint has no plaintext.
    repo.write(FILE, crate::private::PASSPORT);
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let e = run(
        repo.path(),
        &["private", "edit", FILE, "-i", &id_arg(&alice)],
        &[
            (
                "EDITOR",
                "sed -i 's/^type: fact$/type: fact\\nX7777777: [/'",
            ),
            ("VISUAL", ""),
        ],
    );
    assert_eq!(e.code, 1, "{}", e.stderr);
    assert!(e.stderr.contains("not valid"), "{}", e.stderr);
    for secret in ["X7777777", "X1234567"] {
        assert!(
            !e.stderr.contains(secret) && !e.stdout.contains(secret),
            "{}",
            e.stderr
        );
    }
}
