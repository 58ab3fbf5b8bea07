//! `--allow-findings`: what the library's disclosure operation let through
//! ([`ctx_core::disclose::Findings::Allow`]) is said on stderr, so nothing passes silently.

use ctx_core::diag::Diagnostic;
use ctx_core::error::Result;

use super::Printer;

/// Name on stderr each error-level finding a disclosure handed out anyway.
pub fn note(p: &Printer, let_through: &[Diagnostic]) -> Result<()> {
    if !let_through.is_empty() {
        super::io_result(p.err(&format!(
            "warning: handing out context despite {} error-level finding(s) (--allow-findings):\n{}",
            let_through.len(),
            ctx_core::lint::gate::describe(let_through)
        )))?;
    }
    Ok(())
}
