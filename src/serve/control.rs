//! The per-launch control file: where `ctx approvals` (another terminal of the same
//! user) finds the server and the token that lets it answer approvals — and nothing
//! else. `<config>/ctx/personal/<vault>.serve.json`, mode 0600, removed on exit.

use std::net::SocketAddr;
use std::path::PathBuf;

use ctx_core::error::{Error, Result};
use ctx_core::fs::{Existing, Mode};

pub struct ControlFile {
    path: PathBuf,
}

pub fn path(vault: &str) -> Result<PathBuf> {
    let dir = ctx_core::personal::keys::config_dir()
        .ok_or_else(|| Error::Usage("no config folder: set HOME or XDG_CONFIG_HOME".into()))?;
    Ok(dir.join("personal").join(format!("{vault}.serve.json")))
}

impl ControlFile {
    pub fn write(vault: &str, addr: &SocketAddr, token: &str) -> Result<ControlFile> {
        let path = path(vault)?;
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| Error::io(d, &e))?;
        }
        let text = zeroize::Zeroizing::new(
            serde_json::json!({
                "url": format!("http://{addr}"),
                "control_token": token,
                "pid": std::process::id(),
            })
            .to_string(),
        );
        ctx_core::fs::write_atomic(&path, text.as_bytes(), Mode::Private, Existing::Replace)
            .map_err(|e| Error::io(&path, &e))?;
        Ok(ControlFile { path })
    }
}

impl Drop for ControlFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
