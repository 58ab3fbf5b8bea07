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
