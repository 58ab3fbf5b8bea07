//! `ctx fmt [--check] [PATH...]`: rewrite object files into canonical form
//! (key order, RFC 3339 timestamps, safe quoting) without changing their meaning.

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Exit, Result};
use ctx_core::manifest::Manifest;
use ctx_core::reformat::{self, FileResult, FmtOptions};

use super::{Global, Printer};

/// The `--help` text; the key order is written out from the library's table so
/// the two cannot drift.
pub fn long_about() -> String {
    let groups: Vec<String> = ctx_core::reformat::order::CANONICAL_ORDER
        .iter()
        .map(|(name, keys)| format!("{name} ({})", keys.join(", ")))
        .collect();
    format!(
        "Rewrite object files into one canonical form, without changing what they mean.\n\n\
         Top-level keys go in canonical order: {}, then keys ctx does not know in their written \
         order, then extensions and content.\n\n{DETAILS}",
        groups.join(", ")
    )
}

const DETAILS: &str = "\
Timestamps become RFC 3339: a date alone where an instant is expected (created, updated, \
valid_from, expires, sources[].retrieved_at, approval.approved_by[].at) becomes the start of that \
day, UTC (2026-08-01 -> 2026-08-01T00:00:00Z); a space or lowercase t/z becomes T/Z; missing \
seconds become :00. Offsets are kept. Words YAML 1.1 reads as booleans (yes, no, on, off, y, n) \
are quoted so every YAML reader agrees with ctx.

Comments move with the key they sit directly above; the Markdown body is kept byte for byte. \
JSON objects are re-indented with two spaces. Every rewrite is parsed again and compared with \
the original; a file whose meaning would change is refused. Files that do not parse, and \
encrypted members of private collections, are left alone. Writes are atomic and keep the file's \
permissions.

Exit status: 0 when everything is formatted (or, with --check, already was); 1 when --check finds \
files to rewrite or a file cannot be formatted; 3 when a PATH does not exist.";

#[derive(Debug, Args)]
pub struct FmtArgs {
    /// Write nothing; list the files that would change and exit 1 if there are any.
    #[arg(long)]
    pub check: bool,
    /// Object files or folders to format (default: every object file the manifest loads).
    pub paths: Vec<PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &FmtArgs) -> Result<Exit> {
    let (manifest, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let paths = a
        .paths
        .iter()
        .map(|path| {
            if path.is_absolute() {
                path.clone()
            } else {
                g.cwd.join(path)
            }
        })
        .collect();
    let report = reformat::run(
        &manifest,
        &FmtOptions {
            paths,
            check: a.check,
        },
    )?;
    let mut out = String::new();
    let mut err = String::new();
    for f in &report.files {
        match &f.result {
            FileResult::Reformatted(changes) => {
                let what: Vec<String> = changes.iter().map(ToString::to_string).collect();
                let verb = if a.check {
                    "would reformat"
                } else {
                    "reformatted"
                };
                out.push_str(&format!("{verb} {} ({})\n", f.file, what.join("; ")));
            }
            FileResult::Refused(r) => {
                let at = match (r.line, r.column) {
                    (Some(l), Some(c)) => format!(":{l}:{c}"),
                    (Some(l), None) => format!(":{l}"),
                    _ => String::new(),
                };
                err.push_str(&format!("error: {}{at}: {}\n", f.file, r.message));
                if let Some(fix) = &r.fix {
                    err.push_str(&format!("  fix: {fix}\n"));
                }
            }
            FileResult::Skipped(why) => err.push_str(&format!("skipped {}: {why}\n", f.file)),
            FileResult::Unchanged => {}
        }
    }
    for path in &report.unmatched {
        err.push_str(&format!(
            "note: {} holds no object file this repository loads; nothing to format there\n",
            path.display()
        ));
    }
    let changed = report.reformatted();
    let total = report.files.len();
    let summary = match (a.check, changed) {
        (true, 0) => format!("{total} object files already formatted\n"),
        (true, n) => format!("{n} of {total} object files would be reformatted (run `ctx fmt`)\n"),
        (false, n) => format!("{n} of {total} object files reformatted\n"),
    };
    err.push_str(&summary);
    super::io_result(p.out(&out))?;
    super::io_result(p.err(&err))?;
    Ok(if report.refused() > 0 || (a.check && changed > 0) {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}
