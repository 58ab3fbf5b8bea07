//! Approval prompts on the serving terminal (when stdin and stderr are terminals).
//! Each question is shown as inert text (escaped, quoted); a critical one also asks
//! for the field ids retyped or the password (read without echo).

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use ctx_core::personal::service::Decide;

use super::service::Service;

pub fn spawn(svc: Arc<Service>) {
    std::thread::spawn(move || {
        let mut asked: HashSet<String> = HashSet::new();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            for a in svc.pending_approvals() {
                if !asked.insert(a.id.clone()) {
                    continue;
                }
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\n── approval {} (until {}) ──\n{}Approve? [y/N] ",
                    a.id, a.expires_at, a.text
                );
                let _ = err.flush();
                drop(err);
                let mut line = String::new();
                if std::io::stdin().lock().read_line(&mut line).is_err() {
                    return;
                }
                let approve = matches!(line.trim(), "y" | "Y" | "yes");
                let confirmation = if approve && !a.critical.is_empty() {
                    rpassword::prompt_password(format!(
                        "Critical: retype {} (or your password): ",
                        a.critical.join(", ")
                    ))
                    .ok()
                } else {
                    None
                };
                let d = Decide {
                    approve,
                    confirmation,
                    via: "terminal".into(),
                };
                let msg = match svc.decide_local(&a.id, &d) {
                    Ok(v) => format!("approval {}: {}\n", v.id, v.status),
                    Err(e) => format!("approval {}: not recorded: {}\n", a.id, e.message()),
                };
                let _ = std::io::stderr().write_all(msg.as_bytes());
            }
        }
    });
}
