//! `ctx private edit`: an edit session (`ctx_core::private::edit`) around
//! the user's editor. The plaintext lives in a private, memory-backed folder
//! that the session wipes however it ends (a later run sweeps it after
//! SIGKILL).

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::private::edit::{self, Saved};
use ctx_core::private::Scope;

use super::{keyring, report_config, IdentityArgs};
use crate::cli::{Global, Printer};

pub fn run(g: &Global, p: &Printer, path: &Path, ida: &IdentityArgs) -> Result<Exit> {
    let scope = Scope::load(g.dir.as_deref(), &g.cwd)?;
    if report_config(p, &scope) {
        return Ok(Exit::Invalid);
    }
    let ring = keyring(p, ida)?;
    let session = edit::open(&scope, &g.cwd, path, ring.as_ref())?;
    if !session.memory_backed() {
        let _ = p.err(&format!(
            "warning: no memory-backed folder ($XDG_RUNTIME_DIR or /dev/shm); the plaintext is kept in {} while you edit\n",
            session.folder().display()
        ));
    }
    let edited = loop {
        run_editor(session.file())?;
        let edited = session.read_back()?;
        let problems = session.problems(&edited);
        if problems.is_empty() {
            break edited;
        }
        let mut msg = format!("{}: the edited document is not valid:\n", session.rel);
        for line in problems {
            msg.push_str(&format!("  {line}\n"));
        }
        let _ = p.err(&msg);
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if !(interactive && again(p)) {
            let _ = p.err("not saved: the file was left as it was\n");
            return Ok(Exit::Invalid);
        }
    };
    let rel = session.rel.clone();
    match session.save(&edited, ring.as_ref())? {
        Saved::Unchanged { existed } => {
            let what = if existed {
                "left as it was"
            } else {
                "not created"
            };
            let _ = p.err(&format!("no changes: {rel} {what}\n"));
        }
        Saved::Written { recipients, .. } => {
            let _ = p.err(&format!(
                "saved {rel} (encrypted to {recipients} recipient(s))\n"
            ));
        }
    }
    Ok(Exit::Ok)
}

fn again(p: &Printer) -> bool {
    let _ = p.err("Edit again? [Y/n] ");
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    !answer.trim().to_ascii_lowercase().starts_with('n')
}

/// `$VISUAL`, `$EDITOR` or `vi`, run through the shell like git does (so
/// `EDITOR="code --wait"` works). Interrupts reach the editor; ctx survives them
/// so that it can still remove the plaintext.
fn run_editor(file: &Path) -> Result<()> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".into());
    let caught = Arc::new(AtomicBool::new(false));
    let ids: Vec<_> = [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGQUIT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ]
    .iter()
    .filter_map(|s| signal_hook::flag::register(*s, Arc::clone(&caught)).ok())
    .collect();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(&editor)
        .arg(file)
        .status();
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    let status =
        status.map_err(|e| Error::Invalid(format!("cannot run the editor `{editor}`: {e}")))?;
    if !status.success() {
        return Err(Error::Invalid(format!(
            "the editor `{editor}` exited with {status}; nothing was saved"
        )));
    }
    Ok(())
}
