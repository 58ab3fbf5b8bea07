//! The files one `ctx export` writes: where each goes, its disclosure (one `Ask`
//! each, through the library's disclosure operation), its rendering, and how the
//! file already there compares.

use std::path::PathBuf;

use serde_json::Value;

use ctx_core::diag::Severity;
use ctx_core::disclose::{self, Ask, Disclosure};
use ctx_core::error::{Error, Result};
use ctx_core::export::folders::{self, Folder};
use ctx_core::export::plan;
use ctx_core::export::{self, Scope, State, Target};
use ctx_core::load::Repo;
use ctx_core::manifest::Manifest;
use ctx_core::view::output;

use super::ExportArgs;
use crate::cli::Global;

/// A file to write, before anything is resolved.
pub struct Wanted {
    /// The mapped folder it is for (None: the whole repository).
    folder: Option<Folder>,
    path: PathBuf,
    shown: String,
    /// `--output -`.
    stdout: bool,
}

/// A file rendered and compared with what is there.
pub struct Planned {
    pub shown: String,
    pub path: PathBuf,
    pub text: String,
    pub bundle: Value,
    pub disclosure: Disclosure,
    pub state: State,
}

impl Planned {
    pub fn digest(&self) -> &str {
        self.bundle["digest"].as_str().unwrap_or("")
    }
}

/// Where the files go: `--output` or the target's file, or one per mapped folder.
pub fn wanted(g: &Global, a: &ExportArgs, target: Target, m: &Manifest) -> Result<Vec<Wanted>> {
    if !a.per_folder {
        let stdout =
            a.output.is_some() && crate::cli::printer::output_file(a.output.as_deref()).is_none();
        let (path, shown) = match &a.output {
            Some(o) => (
                crate::cli::input::absolute(&g.cwd, o),
                o.display().to_string(),
            ),
            None => (m.root.join(target.default_path()), target.default_path()),
        };
        return Ok(vec![Wanted {
            folder: None,
            path,
            shown,
            stdout,
        }]);
    }
    let (map, findings) = folders::read(m);
    let errors: Vec<String> = findings
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| match d.line {
            Some(l) => format!("  {}:{l}: {}", d.file.as_deref().unwrap_or(""), d.message),
            None => format!("  {}: {}", d.file.as_deref().unwrap_or(""), d.message),
        })
        .collect();
    if !errors.is_empty() {
        return Err(Error::InvalidHint {
            message: format!(
                "`extensions.{}` is invalid, so --per-folder writes nothing:\n{}",
                folders::EXTENSION,
                errors.join("\n")
            ),
            help: "fix the manifest (`ctx validate` lists each finding with its fix)".into(),
        });
    }
    let Some(map) = map else {
        return Err(Error::InvalidHint {
            message: format!(
                "--per-folder writes one file per folder of `extensions.{}.folders`, and {} maps none",
                folders::EXTENSION,
                m.file
            ),
            help: format!(
                "map each folder to the id patterns of its objects, e.g.\n  extensions:\n    {}:\n      folders:\n        \".\": [mission]\n        services/billing: [\"billing.*\"]",
                folders::EXTENSION
            ),
        });
    };
    map.into_iter()
        .map(|f| {
            if !m.root.join(&f.path).is_dir() {
                return Err(Error::InvalidHint {
                    message: format!(
                        "folder `{}` of `extensions.{}.folders` does not exist, so no agent works there",
                        f.shown(),
                        folders::EXTENSION
                    ),
                    help: "create the folder, or correct or remove its entry".into(),
                });
            }
            let shown = target
                .path(f.scope())
                .expect("checked: the target has a file per folder");
            Ok(Wanted {
                path: m.root.join(&shown),
                shown,
                folder: Some(f),
                stdout: false,
            })
        })
        .collect()
}

/// Resolve, render and compare every wanted file. Each folder's file is its own
/// disclosure: the ask narrowed to the folder's id patterns.
pub fn render(
    g: &Global,
    a: &ExportArgs,
    target: Target,
    ask: &Ask,
    repo: &mut Repo,
    wanted: Vec<Wanted>,
    command: &str,
) -> Result<Vec<Planned>> {
    let stamp = g.clock.stamp();
    let last = wanted.len().saturating_sub(1);
    let mut out = Vec::with_capacity(wanted.len());
    for (i, w) in wanted.into_iter().enumerate() {
        if !w.stdout {
            if let Some(loader) = plan::loaded_as_object(&repo.manifest, &g.cwd, &w.path) {
                return Err(Error::InvalidHint {
                    message: format!(
                        "refusing to write {}: {loader} would load it as a context object",
                        w.shown
                    ),
                    help: "write the agent file outside the collections' folders".into(),
                });
            }
        }
        let mut ask = ask.clone();
        if let Some(f) = &w.folder {
            ask.include = f.patterns.clone();
        }
        let mut disclosure = disclose::resolve(repo, &ask)?;
        // Decrypted private content never goes into the work tree unless explicitly
        // allowed, and never into a file git tracks; `--check` holds the file to the
        // same rule.
        if disclosure.holds_private() {
            output::check_private_output(
                &repo.manifest,
                &w.path,
                a.allow_private_output,
                !a.check,
            )?;
        }
        // The last one releases the repository's content: nothing reads it after.
        let bundle = if i == last {
            disclosure.compile_releasing(repo, &stamp)
        } else {
            disclosure.compile(repo, &stamp)
        };
        let scope = w.folder.as_ref().map_or(Scope::Repository, Folder::scope);
        let text = export::render(target, scope, &bundle, command);
        let state = if w.stdout {
            State::Missing
        } else {
            let digest = bundle["digest"].as_str().unwrap_or("");
            plan::existing_state(&w.path, &text, digest)?
        };
        out.push(Planned {
            shown: w.shown,
            path: w.path,
            text,
            bundle,
            disclosure,
            state,
        });
    }
    Ok(out)
}

/// Write one file with its evidence (audit event, receipt when the policy asks).
pub fn write(m: &Manifest, f: &Planned, started_at: &str) -> Result<()> {
    if let Some(parent) = f.path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
    }
    let delivery = disclose::Delivery {
        event: ctx_core::evidence::BundleEvent::Bundle,
        format: "markdown",
        started_at,
        sign: Default::default(),
    };
    let fill = |w: &mut dyn std::io::Write| w.write_all(f.text.as_bytes());
    f.disclosure.deliver(
        m,
        &f.bundle,
        &delivery,
        Some(f.text.as_bytes()),
        disclose::Sink::File {
            path: &f.path,
            fill: Box::new(fill),
        },
    )?;
    Ok(())
}
