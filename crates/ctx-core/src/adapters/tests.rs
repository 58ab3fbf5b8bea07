//! Dispatch, digest checks and trust across adapters.

use std::path::Path;

use super::*;

/// A manifest in `dir` with `extra` YAML appended (e.g. an `adapters:` block).
pub(crate) fn manifest_in(dir: &Path, extra: &str) -> Manifest {
    let text = format!("opencontext: \"1.0\"\nid: t\ncontext: {{}}\n{extra}");
    std::fs::write(dir.join("opencontext.yaml"), text).unwrap();
    Manifest::load(&dir.join("opencontext.yaml")).unwrap().0
}

#[test]
fn unknown_scheme_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "");
    let e = load("crm://pricing/enterprise", &m, &AdapterOptions::default()).unwrap_err();
    assert_eq!(e, AdapterError::UnknownScheme("crm".into()));
    assert_eq!(e.code(), Code::UnknownScheme);
    assert!(e.to_string().contains("`crm`"), "{e}");
}

#[test]
#[cfg(feature = "http")] // without it, every http(s) URI is `built without http`
fn offline_refuses_http_before_looking_at_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "adapters:\n  https:\n    enabled: true\n");
    let opts = AdapterOptions {
        offline: true,
        ..AdapterOptions::default()
    };
    // Port 9 on loopback: nothing answers, and nothing is asked.
    let e = load("https://127.0.0.1:9/x.md", &m, &opts).unwrap_err();
    assert!(matches!(e, AdapterError::Offline(_)), "{e}");
}

#[test]
#[cfg(feature = "http")] // without it, every http(s) URI is `built without http`
fn remote_fetching_is_off_unless_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "");
    let e = load("https://127.0.0.1:9/x.md", &m, &AdapterOptions::default()).unwrap_err();
    assert_eq!(
        e,
        AdapterError::RemoteDisabled("https://127.0.0.1:9/x.md".into(), "https".into())
    );
}

#[test]
fn file_content_is_read_and_digested() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "");
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/a.md"), "hello").unwrap();
    for uri in ["docs/a.md", "./docs/a.md", "file://docs/a.md"] {
        let l = load(uri, &m, &AdapterOptions::default()).unwrap();
        assert_eq!(l.content, Value::String("hello".into()));
        assert_eq!(l.digest, digest(b"hello"));
        assert_eq!(l.trust, Trust::Trusted);
        assert_eq!(l.content_type.as_deref(), Some("text/markdown"));
    }
}

#[test]
fn file_paths_leaving_the_root_are_refused() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(parent.path().join("outside.md"), "secret").unwrap();
    let m = manifest_in(&root, "");
    let opts = AdapterOptions::default();
    let outside = parent.path().join("outside.md");
    for uri in [
        "../outside.md".to_string(),
        "docs/../../outside.md".to_string(),
        format!("file://{}", outside.display()),
        outside.display().to_string(),
    ] {
        let e = load(&uri, &m, &opts).unwrap_err();
        assert_eq!(e, AdapterError::PathTraversal(uri.clone()), "{uri}");
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, root.join("link.md")).unwrap();
        let e = load("link.md", &m, &opts).unwrap_err();
        assert_eq!(e, AdapterError::PathTraversal("link.md".into()));
    }
}

#[test]
fn a_missing_file_is_unavailable_not_empty() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "");
    let e = load("nope.md", &m, &AdapterOptions::default()).unwrap_err();
    assert!(matches!(e, AdapterError::Unavailable { .. }), "{e}");
    assert_eq!(e.code(), Code::SourceUnavailable);
}

#[test]
fn declared_digest_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "");
    std::fs::write(dir.path().join("a.md"), "hello").unwrap();
    let opts = AdapterOptions::default();
    let good = digest(b"hello");
    assert!(load_checked("a.md", Some(&good), &m, &opts).is_ok());
    let bad = digest(b"other");
    match load_checked("a.md", Some(&bad), &m, &opts).unwrap_err() {
        AdapterError::DigestMismatch {
            expected, actual, ..
        } => {
            assert_eq!(expected, bad);
            assert_eq!(actual, good);
        }
        e => panic!("{e}"),
    }
    let e = load_checked("a.md", Some("md5:abc"), &m, &opts).unwrap_err();
    assert!(e.to_string().contains("not sha256"), "{e}");
}

#[test]
fn operator_trust_lowers_but_never_raises() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(
        dir.path(),
        "adapters:\n  file:\n    trust: untrusted\n  https:\n    trust: trusted\n",
    );
    assert_eq!(adapter_trust(&m, "file", Trust::Trusted), Trust::Untrusted);
    assert_eq!(
        adapter_trust(&m, "https", Trust::Untrusted),
        Trust::Untrusted
    );
    assert_eq!(adapter_trust(&m, "git", Trust::Trusted), Trust::Trusted);
    assert_eq!(
        more_cautious(Trust::Verified, Trust::Trusted),
        Trust::Verified
    );
}

#[test]
fn timeout_comes_from_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "adapters:\n  https:\n    timeout_ms: 250\n");
    let opts = AdapterOptions::default();
    assert_eq!(timeout(&m, "https", &opts), Duration::from_millis(250));
    assert_eq!(timeout(&m, "git", &opts), Duration::from_secs(10));
}

#[test]
fn local_forms_of_a_uri_match_their_source() {
    assert!(same_uri("./a.md", "file://a.md"));
    assert!(same_uri("a.md", "./a.md"));
    assert!(!same_uri("a.md", "b.md"));
    assert!(same_uri("https://x/a", "https://x/a"));
    assert!(!same_uri("https://x/a", "https://x/b"));
}

/// What each optional adapter does in this build: it reads, or it names the
/// missing feature (never an unknown scheme, never empty content). CI builds
/// both ways; `cargo test -p ctx-core --no-default-features` runs the other arm.
#[test]
fn an_adapter_left_out_of_the_build_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(
        dir.path(),
        "adapters:\n  https:\n    enabled: true\n  http:\n    enabled: true\n",
    );
    let offline = AdapterOptions {
        offline: true,
        ..AdapterOptions::default()
    };
    for (uri, feature) in [
        ("https://127.0.0.1:9/x.md", "http"),
        ("http://127.0.0.1:9/x.md", "http"),
        ("sqlite://./none.db?table=t&id=1&column=c", "sqlite"),
    ] {
        let built = FEATURES
            .iter()
            .find(|(s, _, _)| Some(*s) == scheme(uri))
            .map(|(_, f, b)| {
                assert_eq!(*f, feature);
                *b
            })
            .unwrap();
        let compiled_in = match feature {
            "http" => cfg!(feature = "http"),
            _ => cfg!(feature = "sqlite"),
        };
        assert_eq!(built, compiled_in);
        let e = load(uri, &m, &offline).unwrap_err();
        let missing = matches!(&e, AdapterError::BuiltWithout { feature: f, .. } if f == feature);
        assert_eq!(missing, !built, "{uri}: {e}");
        if missing {
            assert!(e.to_string().contains("built without it"), "{e}");
            assert_eq!(e.code(), Code::SourceUnavailable);
            // doctor's probe names it too, although it reads nothing.
            assert!(matches!(
                probe(uri, &m),
                Err(AdapterError::BuiltWithout { .. })
            ));
        }
    }
}
