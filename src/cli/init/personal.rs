//! `ctx init --template personal`: a personal vault (seed 004).

use std::path::Path;

use ctx_core::error::{Error, Exit, Result};

use super::{display, InitArgs};
use crate::cli::{Global, Printer};

/// `--template personal`: the vault (manifest, sealed category descriptors, secret key).
pub fn run(
    g: &Global,
    p: &Printer,
    args: &InitArgs,
    dir: &Path,
    id: &str,
    name_yaml: &str,
) -> Result<Exit> {
    if args.force {
        return Err(Error::Usage("--force does not apply to --template personal: a vault is created in a new or empty folder".into()));
    }
    let password = args.password.read(true)?;
    if let Some(why) = ctx_core::personal::keys::password_weakness(&password) {
        let _ = p.err(&format!(
            "warning: the profile password is weak: {why}. It alone guards the vault on this device \
             (the secret key is stored beside it); a longer one now is easier than moving the vault later.\n"
        ));
    }
    let c = ctx_core::personal::template::create(&ctx_core::personal::template::Options {
        dir,
        id,
        name_yaml,
        password: password.as_bytes(),
        recovery: args.recovery.clone(),
        now: &ctx_core::time::format(&g.clock.now()),
        secret_key_file: None,
        seen: ctx_core::personal::integrity::Seen::Config,
    })?;
    let shown = display(dir, &g.cwd);
    let mut report = String::new();
    for f in &c.files {
        report.push_str(&format!("  created  {f}\n"));
    }
    report.push_str(&format!(
        "Initialised personal vault `{id}` in {shown} (vault {})\n\
         Secret key: {}\n  stored in {} (0600). Keep a copy offline: without it and your password\n  the vault cannot be opened (docs/personal.md).\n\
         Next: ctx -C {shown} validate --strict\n      ctx -C {shown} serve\n",
        c.vault,
        c.secret_key.as_str(),
        c.secret_key_file.display()
    ));
    crate::cli::io_result(p.out(&report))?;
    Ok(Exit::Ok)
}
