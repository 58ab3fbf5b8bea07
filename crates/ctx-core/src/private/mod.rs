//! Private collections: members encrypted with age so that a repository whose
//! storage is compromised leaks only the governance metadata needed to authorize
//! and validate (see docs/private.md for the file format).
//!
//! - [`config`]: which collections are private and to whom they are encrypted
//!   (the manifest's `extensions.ctx.private`).
//! - [`format`](mod@format): the on-disk layout (clear header + one ASCII-armored age block).
//! - [`identity`]: where the decrypting identity comes from, loaded lazily.
//! - [`crypt`]: age encryption and decryption, with errors that name the file.
//! - [`ops`]: sealing and opening whole files and loaded objects (no-churn rule).
//! - [`guard`]: `ctx validate` checks (configuration, plaintext in a private collection).
//!
//! Plaintext exists only in memory: nothing here writes decrypted bytes to disk.

pub mod config;
pub mod crypt;
pub mod format;
pub mod guard;
pub mod identity;
pub mod ops;

pub use config::PrivateConfig;
pub use identity::Keyring;
pub use ops::{open_object, Opened};

/// The namespaced extension key, in the manifest and in each encrypted file.
pub const EXTENSION: &str = "ctx.private";
