//! What every command shares: the global flags after parsing, and output error mapping.

use std::path::PathBuf;

use ctx_core::error::{Error, Result};

/// What every command can see.
#[derive(Debug, Clone)]
pub struct Global {
    pub dir: Option<PathBuf>,
    pub cwd: PathBuf,
    pub offline: bool,
    /// The one reading of the clock this command makes.
    pub clock: ctx_core::time::Clock,
    /// Use the parse cache (no `--no-cache`, no `CTX_NO_CACHE`).
    pub cache: bool,
}

impl Global {
    /// How to load the repository the global flags point at.
    pub fn load_options(&self, max_file_size: u64) -> ctx_core::load::LoadOptions {
        ctx_core::load::LoadOptions {
            max_file_size,
            cache: self.cache,
            content: true,
            prose: true,
            content_for: None,
            docs: true,
        }
    }

    /// How validate, doctor and the pre-commit hook load: checks only. Structured
    /// content whole, prose only as its kind (the redaction lints ask only whether
    /// content has fields to redact), and only the documents checks read from, so a
    /// large repository checks in far less memory and time.
    pub fn check_options(&self, max_file_size: u64) -> ctx_core::load::LoadOptions {
        ctx_core::load::LoadOptions {
            prose: false,
            docs: false,
            ..self.load_options(max_file_size)
        }
    }
}

/// Map an output error: a closed pipe is not a failure (`ctx list | head -1`).
pub fn io_result(r: std::io::Result<()>) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Error::BrokenPipe),
        Err(e) => Err(Error::io("<output>", &e)),
    }
}

/// A refused write names the findings that stopped it, like `validate` would,
/// framed relative to the repository (or the current folder without one).
pub fn report_refused(g: &Global, p: &super::Printer, findings: &[ctx_core::diag::Diagnostic]) {
    let root = ctx_core::manifest::discover::locate(g.dir.as_deref(), &g.cwd)
        .ok()
        .and_then(|l| l.path.parent().map(std::path::Path::to_path_buf))
        .unwrap_or_else(|| g.cwd.clone());
    let style = ctx_core::diag::render::HumanStyle {
        color: p.color_err,
        width: p.width,
    };
    let _ = p.err(&ctx_core::diag::render::human(findings, &root, style));
}
