use rusqlite::Connection;

use super::*;
use crate::adapters::tests::manifest_in;
use crate::adapters::{digest, load, AdapterError};
use serde_json::Value;

fn repo() -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    let c = Connection::open(dir.path().join("data/context.db")).unwrap();
    c.execute_batch(
        "CREATE TABLE policies (id TEXT PRIMARY KEY, slug TEXT, body TEXT, n INTEGER);
         INSERT INTO policies VALUES ('refunds', 'refund-policy', 'Refunds within 30 days.', 7);
         INSERT INTO policies VALUES ('empty', 'e', NULL, NULL);
         INSERT INTO policies VALUES ('dup1', 'same', 'a', 1);
         INSERT INTO policies VALUES ('dup2', 'same', 'b', 2);
         CREATE TABLE secrets (id TEXT, body TEXT);
         INSERT INTO secrets VALUES ('x', 'do not leak');",
    )
    .unwrap();
    (dir, m)
}

fn get(m: &Manifest, uri: &str) -> Result<Loaded, AdapterError> {
    load(uri, m, &AdapterOptions::default())
}

#[test]
fn reads_one_cell_read_only_and_verified() {
    let (dir, m) = repo();
    let l = get(
        &m,
        "sqlite://./data/context.db?table=policies&id=refunds&column=body",
    )
    .unwrap();
    assert_eq!(l.content, Value::String("Refunds within 30 days.".into()));
    assert_eq!(l.trust, Trust::Verified);
    assert_eq!(l.digest, digest(b"Refunds within 30 days."));
    let l = get(
        &m,
        "sqlite://data/context.db?table=policies&id=refund-policy&column=n&key=slug",
    )
    .unwrap();
    assert_eq!(l.content, Value::String("7".into()));
    // Reading left no journal or change behind.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["context.db".to_string()]);
}

#[test]
fn injection_in_the_key_stays_data() {
    let (_d, m) = repo();
    let e = get(
        &m,
        "sqlite://data/context.db?table=policies&id=%27%20OR%201=1%20--&column=body",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("no row with id = \"' OR 1=1 --\""),
        "{e}"
    );
    let e = get(
        &m,
        "sqlite://data/context.db?table=policies&id=' OR 1=1 --&column=body",
    )
    .unwrap_err();
    assert!(e.to_string().contains("no row"), "{e}");
}

#[test]
fn identifiers_must_be_plain_and_in_the_catalogue() {
    let (_d, m) = repo();
    for (uri, why) in [
        (
            "sqlite://data/context.db?table=policies;DROP&id=x&column=body",
            "not a plain identifier",
        ),
        (
            "sqlite://data/context.db?table=policies&id=x&column=body%22--",
            "not a plain identifier",
        ),
        (
            "sqlite://data/context.db?table=nope&id=x&column=body",
            "no table `nope`",
        ),
        (
            "sqlite://data/context.db?table=policies&id=x&column=nope",
            "no column `nope`",
        ),
        (
            "sqlite://data/context.db?table=policies&id=x&column=body&key=nope",
            "no key `nope`",
        ),
        (
            "sqlite://data/context.db?table=policies&id=x",
            "missing `column=`",
        ),
        (
            "sqlite://data/context.db?table=policies&id=x&column=body&sql=1",
            "unknown query parameter `sql`",
        ),
        (
            "sqlite://data/context.db?table=a&table=b&id=x&column=body",
            "given twice",
        ),
        ("sqlite://data/context.db", "expected sqlite://"),
    ] {
        let e = get(&m, uri).unwrap_err();
        assert!(e.to_string().contains(why), "{uri}: {e}");
    }
}

#[test]
fn null_and_ambiguous_rows_are_errors_not_empty_content() {
    let (_d, m) = repo();
    let e = get(
        &m,
        "sqlite://data/context.db?table=policies&id=empty&column=body",
    )
    .unwrap_err();
    assert!(e.to_string().contains("is NULL"), "{e}");
    let e = get(
        &m,
        "sqlite://data/context.db?table=policies&id=same&column=body&key=slug",
    )
    .unwrap_err();
    assert!(e.to_string().contains("more than one row"), "{e}");
}

#[test]
fn the_database_must_be_inside_the_repository() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    Connection::open(parent.path().join("out.db"))
        .unwrap()
        .execute_batch("CREATE TABLE t (id TEXT, body TEXT); INSERT INTO t VALUES ('a', 'b');")
        .unwrap();
    let m = manifest_in(&root, "");
    let uri = "sqlite://../out.db?table=t&id=a&column=body";
    assert_eq!(
        get(&m, uri).unwrap_err(),
        AdapterError::PathTraversal(uri.into())
    );
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(parent.path().join("out.db"), root.join("in.db")).unwrap();
        let uri = "sqlite://in.db?table=t&id=a&column=body";
        assert_eq!(
            get(&m, uri).unwrap_err(),
            AdapterError::PathTraversal(uri.into())
        );
    }
}

#[test]
fn a_file_that_is_not_a_database_is_unavailable() {
    let (dir, m) = repo();
    std::fs::write(
        dir.path().join("data/bad.db"),
        "not sqlite at all, just text",
    )
    .unwrap();
    let e = get(
        &m,
        "sqlite://data/bad.db?table=policies&id=refunds&column=body",
    )
    .unwrap_err();
    assert!(matches!(e, AdapterError::Unavailable { .. }), "{e}");
}
