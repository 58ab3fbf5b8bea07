//! Helpers shared by unit tests.
use std::path::PathBuf;

/// The AtMem delegated-provider conformance folder in the shared workspace,
/// or `None` (with a note on stderr) when this checkout runs without it.
pub fn atmem_reference_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("../shared/reference/atmem-delegated-provider-v1");
    if dir.join("test-vectors.json").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "note: {} is absent; skipping the AtMem reference fixtures",
            dir.display()
        );
        None
    }
}

/// Our own committed provider vectors (always present in the repository).
pub fn own_vectors_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("fixtures/provider-vectors")
}

/// A repository written from `(relative path, text)` pairs into a temporary
/// folder and loaded (keep the folder alive as long as the repository).
pub fn repo_from(files: &[(&str, &str)]) -> (tempfile::TempDir, crate::load::Repo) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("a folder");
        std::fs::write(p, text).expect("a file");
    }
    let (m, diags) =
        crate::manifest::Manifest::discover(Some(dir.path()), dir.path()).expect("a manifest");
    let repo = crate::load::load(m, diags, &crate::load::LoadOptions::default());
    (dir, repo)
}
