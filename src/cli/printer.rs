//! The one printer: the product goes to stdout (or `--output`), diagnostics and
//! progress to stderr. Files are written atomically and keep the mode of the file
//! they replace (a new file gets the mode an editor would give it). `--output -`
//! means stdout, for every command that has `--output`.

use std::io::{self, IsTerminal, Write};
use std::path::Path;

use ctx_core::fs::{write_atomic, write_atomic_with, Existing, Mode};

/// The file an `--output` value names: None for stdout (no flag, or `-`).
pub fn output_file(path: Option<&Path>) -> Option<&Path> {
    path.filter(|p| *p != Path::new("-"))
}

/// `--color` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

pub struct Printer {
    pub color_out: bool,
    pub color_err: bool,
    pub width: usize,
}

fn env_allows_color() -> Option<bool> {
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return Some(false);
    }
    if std::env::var("CLICOLOR_FORCE").is_ok_and(|v| v != "0") {
        return Some(true);
    }
    if std::env::var("CLICOLOR").is_ok_and(|v| v == "0") {
        return Some(false);
    }
    None
}

impl Printer {
    pub fn new(choice: ColorChoice) -> Printer {
        let decide = |tty: bool| match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => env_allows_color().unwrap_or(tty),
        };
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(100);
        Printer {
            color_out: decide(io::stdout().is_terminal()),
            color_err: decide(io::stderr().is_terminal()),
            width,
        }
    }

    /// Write the product to stdout.
    pub fn out(&self, text: &str) -> io::Result<()> {
        let mut lock = io::stdout().lock();
        lock.write_all(text.as_bytes())?;
        lock.flush()
    }

    /// Write a diagnostic or note to stderr.
    pub fn err(&self, text: &str) -> io::Result<()> {
        let mut lock = io::stderr().lock();
        lock.write_all(text.as_bytes())?;
        lock.flush()
    }

    /// Write the product to `path` (atomically) or to stdout when `path` is None or `-`.
    pub fn product(&self, text: &str, path: Option<&Path>) -> io::Result<()> {
        match output_file(path) {
            Some(p) => write_atomic(p, text.as_bytes(), Mode::Preserve, Existing::Replace),
            None => self.out(text),
        }
    }
}

impl Printer {
    /// Write a JSON document (pretty, newline-terminated) to `path` or stdout,
    /// streamed: a large bundle is never held twice in memory.
    pub fn product_json(&self, v: &serde_json::Value, path: Option<&Path>) -> io::Result<()> {
        let emit = |w: &mut dyn Write| -> io::Result<()> {
            let mut buf = io::BufWriter::with_capacity(1 << 16, w);
            serde_json::to_writer_pretty(&mut buf, v).map_err(io::Error::from)?;
            buf.write_all(b"\n")?;
            buf.flush()
        };
        match output_file(path) {
            Some(p) => write_atomic_with(p, Mode::Preserve, Existing::Replace, |f| emit(f)),
            None => {
                let mut lock = io::stdout().lock();
                emit(&mut lock)
            }
        }
    }
}
