//! Files and paths: the one place ctx touches the file system for its own writes
//! and for bounded reads.
//!
//! - [`write_atomic`] and friends: temp file + fsync + rename + folder fsync, with an
//!   explicit [`Mode`] per write (repository files get an editor's mode, secrets 0600).
//! - [`RepoLock`] and [`lock_file`]: exclusive locks for writers and appenders.
//! - [`confine`]: no reference leaves the manifest folder, links included.
//! - [`RelPath`]: `/`-separated paths relative to the manifest folder.
//! - [`read_regular`]: only regular files, only up to a limit (a FIFO never hangs ctx).
//! - [`is_gitignored`]: what `.gitignore` keeps out of the repository.

mod atomic;
pub mod confine;
mod ignored;
mod lock;
mod read;
mod relpath;

pub use atomic::{
    create_new, replace_if_unchanged, sync_dir, write_atomic, write_atomic_with, Existing, Mode,
    ReplaceError,
};
pub use ignored::is_gitignored;
pub use lock::{lock_file, lock_open, RepoLock};
pub use read::{kind, open_regular, read_regular, ReadError};
pub use relpath::{RelPath, RelPathError};
