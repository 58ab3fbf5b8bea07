//! Private collections: members encrypted with age so that a repository whose
//! storage is compromised leaks only the governance metadata needed to authorize
//! and validate (see docs/private.md for the file format).
//!
//! - [`config`]: which collections are private and to whom they are encrypted
//!   (the manifest's `extensions.ctx.private`).
//! - [`mod@format`]: the on-disk layout (clear header + one ASCII-armored age block).
//! - [`identity`]: where the decrypting identity comes from, loaded lazily.
//! - [`crypt`]: age encryption and decryption, with errors that name the file.
//! - [`ops`]: sealing and opening whole files and loaded objects (no-churn rule).
//! - [`strict`]: the whole file is checked: nothing in clear but governance
//!   fields, the marker and one armored block.
//! - [`scope`]: the repository as private operations see it; which members a
//!   path names; the identity rules shared by every command.
//! - [`batch`]: encrypt and rekey as plans (in memory) plus apply.
//! - [`status`]: the state of every private file.
//! - [`edit`]: one edit session; [`scratch`]: its plaintext folder, and the
//!   sweep of folders left by killed sessions.
//! - [`guard`]: `ctx validate` checks (configuration, plaintext in a private collection).
//!
//! Plaintext exists only in memory, with one exception an editor forces:
//! the file of an edit session, in a private memory-backed folder that is
//! wiped when the session ends (see [`scratch`] for what remains).

pub mod batch;
pub mod config;
pub mod crypt;
pub mod edit;
mod error;
pub mod format;
pub mod guard;
pub mod identity;
pub mod ops;
pub mod scope;
pub mod scratch;
pub mod status;
pub mod strict;

pub use config::PrivateConfig;
pub use error::{ArmorError, HeaderError, IdentityError, ParseError, RecipientError, SealError};
pub use identity::Keyring;
pub use ops::{open_object, Opened};
pub use scope::Scope;

/// The namespaced extension key, in the manifest and in each encrypted file.
pub const EXTENSION: &str = "ctx.private";
