//! Helpers shared by unit tests.
use std::path::{Path, PathBuf};

/// Write `text` at `rel` under `root`, creating its folders.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("a parent")).expect("a folder");
    std::fs::write(p, text).expect("a file");
}

/// Wait until the files just written are older than the caches' racy margin, so a
/// cache may trust their stamps.
pub fn settle() {
    let margin = crate::load::cache::stamp::RACY_MARGIN_NS as u64;
    std::thread::sleep(std::time::Duration::from_nanos(margin + 50_000_000));
}

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
        write_file(dir.path(), rel, text);
    }
    let (m, diags) =
        crate::manifest::Manifest::discover(Some(dir.path()), dir.path()).expect("a manifest");
    let repo = crate::load::load(m, diags, &crate::load::LoadOptions::default());
    (dir, repo)
}
