//! What every Context Layer command (`request`, `approve`, `exchange`, `receipts`,
//! `propose`, `proposals`, `discover`) shares: `--at`/`--format`, loading the
//! exchange, reading input documents, and mapping protocol errors to exits.

use std::io::Read;
use std::path::Path;

use clap::Args;
use serde_json::Value;

use ctx_core::error::{Error, Result};
use ctx_core::exchange::canon;
use ctx_core::exchange::error::{ClError, ErrorKind};
use ctx_core::exchange::ops::Exchange;
use ctx_core::exchange::view::ViewOptions;
use ctx_core::load::Repo;
use ctx_core::time::{Clock, Instant};

use crate::cli::{Global, Printer};

/// Flags every exchange command that reads the repository shares.
#[derive(Debug, Args, Clone, Default)]
pub struct CommonArgs {
    /// Act as of this RFC 3339 instant (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// `human` or `json`.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
}

impl CommonArgs {
    pub fn json(&self) -> bool {
        self.format == "json"
    }
}

/// `--at`, or the command's one reading of the clock, at the profile's
/// millisecond resolution. Every exchange command judges at this instant, like
/// the rest of ctx does with [`Clock::at`].
pub fn at(clock: &Clock, s: Option<&str>) -> Result<Instant> {
    let t = match s {
        Some(s) => canon::parse_time(s).ok_or_else(|| {
            Error::Usage(format!(
                "--at `{s}` is not an RFC 3339 instant such as 2026-08-09T12:00:00Z"
            ))
        })?,
        None => clock.precise(),
    };
    Ok(canon::to_ms(t))
}

/// Load the repository the global flags point at.
pub fn repo(g: &Global) -> Result<Repo> {
    crate::cli::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)
}

/// The exchange over a loaded repository.
pub fn exchange<'r>(g: &Global, repo: &'r Repo, _c: &CommonArgs) -> Result<Exchange<'r>> {
    Exchange::new(repo, ViewOptions { offline: g.offline }).map_err(cl)
}

/// A protocol error as a command error (code first, so scripts can match it).
pub fn cl(e: ClError) -> Error {
    let text = format!("{}: {}", e.code, e.message);
    match e.kind() {
        ErrorKind::Usage => Error::Usage(e.message),
        ErrorKind::NotFound => Error::NotFound(text),
        ErrorKind::Rejected => Error::Invalid(text),
    }
}

/// Report a protocol error: on stdout as an error object with `--format json`,
/// always on stderr (through the returned error).
pub fn reject(g: &Global, p: &Printer, c: &CommonArgs, e: ClError) -> Error {
    if c.json() {
        let at = at(&g.clock, c.at.as_deref()).unwrap_or_else(|_| canon::to_ms(g.clock.precise()));
        let _ = print_json(p, &e.document(at));
    }
    cl(e)
}

/// Read a file (`-`: stdin) as bytes.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| Error::io("<stdin>", &e))?;
        return Ok(b);
    }
    crate::cli::input::read_file(path)
}

/// Read a JSON document strictly (duplicate members refused).
pub fn read_doc(path: &Path) -> Result<Value> {
    let bytes = read_bytes(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::Invalid(format!("{}: not UTF-8 text", path.display())))?;
    ctx_core::json::parse(&text).map_err(|e| Error::InvalidHint {
        message: format!(
            "INVALID_JSON: {}:{}:{}: {}",
            path.display(),
            e.line,
            e.column,
            e.message
        ),
        help: "the file must be one JSON document".into(),
    })
}

/// Print a JSON document.
pub fn print_json(p: &Printer, v: &Value) -> Result<()> {
    crate::cli::io_result(p.out(&(serde_json::to_string_pretty(v).expect("JSON") + "\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without `--at` the command's clock decides, not a fresh system reading,
    /// so a fixed clock (tests, replays) reaches every exchange command.
    #[test]
    fn at_reads_the_injected_clock() {
        let t = canon::parse_time("2031-02-03T04:05:06.789Z").unwrap();
        let clock = Clock::fixed(t);
        assert_eq!(at(&clock, None).unwrap(), t);
        let given = canon::parse_time("2026-08-09T12:00:00Z").unwrap();
        assert_eq!(at(&clock, Some("2026-08-09T12:00:00Z")).unwrap(), given);
        assert!(matches!(
            at(&clock, Some("yesterday")),
            Err(Error::Usage(_))
        ));
    }
}
