//! Files and paths: the one place ctx touches the file system for its own writes
//! and for bounded reads.
//!
//! - [`write_atomic`] and friends: staged file + fsync + rename + folder fsync, with an
//!   explicit [`Mode`] per write (repository files get an editor's mode, secrets 0600).
//! - [`tmp`]: where staged files go (`.ctx/tmp/`, ignored by git) and the sweep of
//!   what killed runs left; [`txn`]: several files and their audit events as one
//!   crash-safe transaction.
//! - [`RepoLock`] and [`lock_file`]: exclusive locks for writers and appenders.
//! - [`failpoint`]: the crash tests' injected kills and short writes.
//! - [`confine`]: no reference leaves the manifest folder, links included.
//! - [`RelPath`]: `/`-separated paths relative to the manifest folder.
//! - [`read_regular`]: only regular files, only up to a limit (a FIFO never hangs ctx).
//! - [`is_gitignored`]: what `.gitignore` keeps out of the repository.

mod atomic;
pub mod confine;
pub mod failpoint;
mod ignored;
mod lock;
mod read;
mod relpath;
pub mod tmp;
pub mod txn;

pub use atomic::{
    create_new, replace_if_unchanged, sync_dir, write_atomic, write_atomic_with, Existing, Mode,
    ReplaceError,
};
pub use ignored::is_gitignored;
pub use lock::{lock_file, lock_open, tidy, RepoLock, LOCK_FILE};
pub use read::{kind, open_regular, read_regular, ReadError};
pub use relpath::{RelPath, RelPathError};
pub use txn::Txn;
