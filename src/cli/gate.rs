//! `--allow-findings`: the CLI side of the library's output gate
//! ([`ctx_core::lint::output_gate`]). Refuses, or says on stderr what was let through.

use ctx_core::error::Result;
use ctx_core::load::Repo;
use ctx_core::resolve::Resolution;

use super::Printer;

/// Refuse to emit `resolution` while error-level findings concern its objects, unless
/// `allow`; when allowed, list them on stderr so nothing passes silently.
pub fn check(p: &Printer, repo: &Repo, resolution: &Resolution, allow: bool) -> Result<()> {
    let let_through = ctx_core::lint::output_gate(repo, resolution, allow)?;
    if !let_through.is_empty() {
        super::io_result(p.err(&format!(
            "warning: handing out context despite {} error-level finding(s) (--allow-findings):\n{}",
            let_through.len(),
            ctx_core::lint::gate::describe(&let_through)
        )))?;
    }
    Ok(())
}
