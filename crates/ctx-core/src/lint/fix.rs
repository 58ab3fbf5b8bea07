//! `validate --fix`: the fixes that cannot change what a file means, and only where
//! one is needed. A file is rewritten only when `ctx fmt` would repair a value in it
//! (a date where a timestamp belongs, a YAML 1.1 boolean word left unquoted); the
//! rewrite is `ctx fmt`'s, so it is checked by re-parsing and written atomically.
//! Files that need only cosmetic changes (key order, layout) are left alone.

use std::path::PathBuf;

use crate::error::Result;
use crate::manifest::Manifest;
use crate::reformat::{self, Change, FileResult, FmtOptions};

/// One file `validate --fix` rewrote, and the value repairs it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixed {
    /// Path relative to the manifest folder.
    pub file: String,
    pub changes: Vec<Change>,
}

fn repairs(result: &FileResult) -> Vec<Change> {
    match result {
        FileResult::Reformatted(changes) => changes
            .iter()
            .filter(|c| matches!(c, Change::Timestamp { .. } | Change::Quoted { .. }))
            .cloned()
            .collect(),
        _ => Vec::new(),
    }
}

/// Apply the meaning-preserving repairs; with `dry_run`, only say what they would be.
pub fn run(m: &Manifest, dry_run: bool) -> Result<Vec<Fixed>> {
    let planned = reformat::run(
        m,
        &FmtOptions {
            paths: Vec::new(),
            check: true,
        },
    )?;
    let wanted: Vec<Fixed> = planned
        .files
        .iter()
        .map(|f| Fixed {
            file: f.file.clone(),
            changes: repairs(&f.result),
        })
        .filter(|f| !f.changes.is_empty())
        .collect();
    if dry_run || wanted.is_empty() {
        return Ok(wanted);
    }
    let done = reformat::run(
        m,
        &FmtOptions {
            paths: wanted
                .iter()
                .map(|f| m.root.join(&f.file))
                .collect::<Vec<PathBuf>>(),
            check: false,
        },
    )?;
    Ok(done
        .files
        .iter()
        .map(|f| Fixed {
            file: f.file.clone(),
            changes: repairs(&f.result),
        })
        .filter(|f| !f.changes.is_empty())
        .collect())
}
