//! `ctx history <id>`: the declared versions of an object a consumer may see
//! (what the organization believed, and when), then the git commits that touched
//! their files. Works without git: the commits are then unavailable, with why.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::git::{Commit, Git};
use crate::view::View;

/// One declared version, as the consumer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub version: Option<u64>,
    pub lifecycle: &'static str,
    pub authority: &'static str,
    pub updated: Option<String>,
    pub file: String,
    pub supersedes: Vec<String>,
    /// Only a successor this consumer may see is named.
    pub superseded_by: Option<String>,
}

/// The history of one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    pub id: String,
    /// Oldest first.
    pub versions: Vec<Version>,
    /// The commits that touched the versions' files (newest first), or why there are none.
    pub commits: std::result::Result<Vec<Commit>, String>,
}

/// The history of `id` in what `v` shows; `NotFound` when no version is visible.
pub fn query(v: &View<'_>, id: &str) -> Result<History> {
    let repo = v.repo();
    // Objects are sorted by id, then version: the visible ones of this id, oldest first.
    let visible: Vec<_> = v
        .visible(true)
        .into_iter()
        .filter(|(i, _)| repo.objects[*i].id == id)
        .collect();
    if visible.is_empty() {
        return Err(Error::NotFound(format!("no object `{id}` is visible here")));
    }
    let versions: Vec<Version> = visible
        .iter()
        .map(|&(i, state)| {
            let o = &repo.objects[i];
            Version {
                version: o.version,
                lifecycle: state.as_str(),
                authority: o.meta.authority.as_str(),
                updated: o.meta.updated.map(|t| crate::time::format(&t)),
                file: o.origin.file.clone(),
                supersedes: o.meta.supersedes.iter().map(|r| r.to_string()).collect(),
                superseded_by: v.successor(i).map(|s| repo.objects[s].key()),
            }
        })
        .collect();
    let mut files: Vec<String> = versions.iter().map(|x| x.file.clone()).collect();
    files.sort();
    files.dedup();
    let commits = match Git::discover(&repo.manifest.root) {
        Some(git) => git.log(&files).map_err(|e| e.to_string()),
        None => Err("not a git work tree (or git is not installed)".into()),
    };
    Ok(History {
        id: id.to_string(),
        versions,
        commits,
    })
}

impl History {
    /// The JSON document (`commits` is null when git could not be asked).
    pub fn json(&self) -> Value {
        let versions: Vec<Value> = self
            .versions
            .iter()
            .map(|v| {
                json!({
                    "version": v.version,
                    "lifecycle": v.lifecycle,
                    "authority": v.authority,
                    "updated": v.updated,
                    "file": v.file,
                    "supersedes": v.supersedes,
                    "superseded_by": v.superseded_by,
                })
            })
            .collect();
        let commits = self.commits.as_ref().ok().map(|cs| {
            cs.iter()
                .map(|c| json!({"hash": c.hash, "date": c.date, "author": c.author, "subject": c.subject}))
                .collect::<Vec<_>>()
        });
        json!({"id": self.id, "versions": versions, "commits": commits})
    }

    /// The people view: an aligned table of versions, then the commits.
    pub fn text(&self) -> String {
        let mut out = format!("History of {}\n\n", self.id);
        let table: Vec<[String; 5]> = self
            .versions
            .iter()
            .map(|v| {
                [
                    v.version.map_or_else(|| "-".into(), |n| format!("v{n}")),
                    v.lifecycle.to_string(),
                    v.authority.to_string(),
                    v.updated.clone().unwrap_or_else(|| "-".into()),
                    v.file.clone(),
                ]
            })
            .collect();
        let mut w = [0usize; 5];
        for row in &table {
            for (n, c) in row.iter().enumerate() {
                w[n] = w[n].max(c.chars().count());
            }
        }
        for (row, v) in table.iter().zip(&self.versions) {
            let mut line = format!(
                "  {:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                w0 = w[0],
                w1 = w[1],
                w2 = w[2],
                w3 = w[3]
            );
            if let Some(s) = &v.superseded_by {
                let _ = write!(line, "  → superseded by {s}");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if let Ok(cs) = &self.commits {
            out.push_str("\nCommits:\n");
            if cs.is_empty() {
                out.push_str("  (none: the files are not committed yet)\n");
            }
            for c in cs {
                let short = &c.hash[..c.hash.len().min(8)];
                let _ = writeln!(out, "  {short}  {}  {}  {}", c.date, c.author, c.subject);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Who;

    #[test]
    fn versions_oldest_first_without_git() {
        let files = [
            ("opencontext.yaml", "opencontext: \"1.0\"\nid: acme\nname: ACME\ncollections:\n  policies: ./context/policies/**\n"),
            ("context/policies/a1.md", "---\nid: policies.a\ntype: policy\nowner: x\nversion: 1\n---\nOne.\n"),
            ("context/policies/a2.md", "---\nid: policies.a\ntype: policy\nowner: x\nversion: 2\nsupersedes: [policies.a@1]\n---\nTwo.\n"),
        ];
        let (_dir, repo) = crate::testutil::repo_from(&files);
        let at = crate::time::parse_at("2026-09-01").unwrap();
        let v = View::open(&repo, &Who::default(), at).unwrap();
        let h = query(&v, "policies.a").unwrap();
        assert_eq!(h.versions.len(), 2);
        assert_eq!(h.versions[0].version, Some(1));
        assert_eq!(h.versions[0].superseded_by.as_deref(), Some("policies.a@2"));
        assert_eq!(h.versions[1].supersedes, ["policies.a@1"]);
        if h.commits.is_err() {
            assert_eq!(h.json()["commits"], Value::Null);
            assert!(!h.text().contains("Commits:"));
        }
        assert!(
            h.text().starts_with("History of policies.a\n\n  v1  "),
            "{}",
            h.text()
        );
        assert!(matches!(
            query(&v, "policies.none"),
            Err(Error::NotFound(_))
        ));
    }
}
