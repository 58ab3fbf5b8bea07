//! One server per vault. A process that serves a vault (`ctx serve`, `ctx mcp`,
//! `ctx private upgrade-vault`) holds an exclusive lock on
//! `.ctx/personal/server.lock` for its lifetime and records in it who it is (pid,
//! command, since when). A second process does not wait: it is refused at once with
//! the holder's name, so the user knows which server to stop or to use.
//!
//! The record is informational only (anyone who can write the folder can write it);
//! the lock itself is the operating system's and ends with the process.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Error, Result};

pub const FILE: &str = "server.lock";

/// The vault's server lock, held until dropped.
#[derive(Debug)]
pub struct VaultLock {
    _file: File,
    path: PathBuf,
}

/// Who holds a vault, as its lock file records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: Option<u64>,
    pub command: String,
    pub since: String,
}

impl Holder {
    fn parse(text: &str) -> Option<Holder> {
        let v: Value = serde_json::from_str(text.trim()).ok()?;
        Some(Holder {
            pid: v["pid"].as_u64(),
            command: v["command"].as_str()?.to_string(),
            since: v["since"].as_str().unwrap_or("an unknown time").to_string(),
        })
    }
}

impl VaultLock {
    /// Take the lock of the vault whose state folder is `state_dir`, as `command`
    /// (`ctx serve`); refused at once, naming the holder, when another process has it.
    pub fn acquire(state_dir: &Path, command: &str) -> Result<VaultLock> {
        std::fs::create_dir_all(state_dir).map_err(|e| Error::io(state_dir, &e))?;
        let path = state_dir.join(FILE);
        let mut o = std::fs::OpenOptions::new();
        o.create(true).truncate(false).read(true).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        let mut file = o.open(&path).map_err(|e| Error::io(&path, &e))?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(held(state_dir, Holder::parse(&text)));
            }
            Err(fs4::TryLockError::Error(e)) => return Err(Error::io(&path, &e)),
        }
        let record = json!({
            "pid": std::process::id(),
            "command": command,
            "since": crate::evidence::now(),
        });
        let write = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.seek(SeekFrom::Start(0))?;
            f.write_all(format!("{record}\n").as_bytes())?;
            f.sync_data()
        };
        write(&mut file).map_err(|e| Error::io(&path, &e))?;
        Ok(VaultLock { _file: file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn held(state_dir: &Path, h: Option<Holder>) -> Error {
    let who = match h {
        Some(h) => format!(
            "`{}`{} since {}",
            h.command,
            h.pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
            h.since
        ),
        None => "another process (it has not recorded who it is yet)".into(),
    };
    Error::InvalidHint {
        message: format!("vault {} is held by {who}", state_dir.display()),
        help: "stop it or use that server: one process serves a vault at a time".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_vault_is_refused_at_once_with_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = VaultLock::acquire(dir.path(), "ctx serve").unwrap();
        let e = VaultLock::acquire(dir.path(), "ctx mcp").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "is held by `ctx serve` (pid {}) since ",
                std::process::id()
            )),
            "{text}"
        );
        assert!(e.help().unwrap().contains("stop it or use that server"));
        assert_eq!(e.exit(), crate::error::Exit::Invalid);
        drop(first);
        let again = VaultLock::acquire(dir.path(), "ctx mcp").unwrap();
        let text = std::fs::read_to_string(again.path()).unwrap();
        assert_eq!(Holder::parse(&text).unwrap().command, "ctx mcp");
    }
}
