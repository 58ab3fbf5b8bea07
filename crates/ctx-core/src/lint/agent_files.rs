//! Agent files `ctx export` generated that their host will not read where they
//! sit (see [`crate::export::placement`] for the rules), and what is wrong with the
//! `extensions.ctx.export` folder map. Such a file looks installed and is silently
//! ignored, so the context it carries reaches no agent.
//!
//! The finding's code is `orphaned`, the closed code set's name for context no
//! consumer can reach (the loader uses it, as a warning too, for object files that
//! nothing loads): OpenContext's diagnostic codes are normative and closed, and a
//! report with a code of ctx's own would not validate against the diagnostic schema.

use std::collections::HashSet;

use crate::diag::{Code, Diagnostic};
use crate::export::placement::{self, Place, Tree, INSTRUCTION_FILES};
use crate::export::{folders, scan};
use crate::fs::RelPath;
use crate::load::Repo;

/// The code of a misplaced generated file.
pub const CODE: Code = Code::Orphaned;

pub fn check(repo: &Repo, out: &mut Vec<Diagnostic>) {
    out.extend(folders::read(&repo.manifest).1);
    let members: HashSet<&str> = repo
        .objects
        .iter()
        .map(|o| o.origin.file.as_str())
        .collect();
    let found = scan::scan(&repo.manifest, &members);
    if found.generated.is_empty() {
        return;
    }
    let mut files: Vec<&str> = found.files.iter().map(RelPath::as_str).collect();
    files.extend(members.iter().filter(|f| !f.contains("://")));
    files.sort_unstable();
    files.dedup();
    let tree = Walked { files };
    let below = scan::below_git_root(&repo.manifest.root);
    for g in &found.generated {
        // A target this ctx does not know (a newer one's file): nothing to say.
        let Some(target) = g.target else { continue };
        let place = Place {
            rel: g.rel.as_str(),
            below_git_root: below.as_deref(),
        };
        let Some(m) = placement::check(target, place, &g.text, g.chars, &tree) else {
            continue;
        };
        out.push(
            Diagnostic::warning(
                CODE,
                format!(
                    "`{}` was generated for {} (--target {}), but {}",
                    g.rel,
                    target.host(),
                    target.name(),
                    m.reason
                ),
            )
            .file(g.rel.to_string())
            .line(g.marker_line)
            .expected(format!("a file {} reads", target.host()))
            .actual("not read")
            .fix(m.fix),
        );
    }
}

/// The walked files of the repository (sorted), generated files excluded.
struct Walked<'a> {
    files: Vec<&'a str>,
}

impl Tree for Walked<'_> {
    fn has_work_under(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        let start = self.files.partition_point(|f| *f < prefix.as_str());
        self.files[start..]
            .iter()
            .take_while(|f| f.starts_with(&prefix))
            .any(|f| {
                let name = f.rsplit('/').next().unwrap_or(f);
                !INSTRUCTION_FILES.contains(&name)
            })
    }

    fn matches_any(&self, globs: &[String]) -> Option<bool> {
        let mut set = globset::GlobSetBuilder::new();
        for g in globs {
            match globset::GlobBuilder::new(g).literal_separator(true).build() {
                Ok(glob) => {
                    set.add(glob);
                }
                // A glob the host cannot use either matches nothing.
                Err(_) => continue,
            }
        }
        let set = set.build().ok()?;
        Some(self.files.iter().any(|f| set.is_match(f)))
    }
}
