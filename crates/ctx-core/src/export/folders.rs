//! `extensions.ctx.export.folders`: which objects the agent file of each folder of
//! a monorepo carries, for `ctx export --per-folder`. Each folder gets the objects
//! its id patterns name (the same patterns as `--include`, within what the
//! consumer may see), so the nearest file — the one hosts read for the files under
//! a folder — holds what work there needs:
//!
//! ```yaml
//! extensions:
//!   ctx.export:
//!     folders:
//!       .: [mission, "policies.*"]              # the repository folder
//!       services/billing: ["billing.*", "policies.refunds"]
//! ```
//!
//! Folders are relative to the manifest folder. The mapping lives in ctx's
//! extension namespace, so the repository stays valid OpenContext v1; objects
//! themselves say nothing about folders (one place to read, and a folder's file
//! changes only when the manifest or its objects do).

use serde_json::Value;

use crate::diag::{Code, Diagnostic};
use crate::manifest::Manifest;
use crate::pattern::Pattern;
use crate::schema::PathItem;

use super::Scope;

/// The extension's key.
pub const EXTENSION: &str = "ctx.export";

/// One folder and the id patterns of the objects its file carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    /// `/`-separated, relative to the manifest folder; empty for the folder itself.
    pub path: String,
    pub patterns: Vec<String>,
}

impl Folder {
    pub fn scope(&self) -> Scope<'_> {
        if self.path.is_empty() {
            Scope::Repository
        } else {
            Scope::Folder(&self.path)
        }
    }

    /// The folder as people write it (`.` for the manifest folder).
    pub fn shown(&self) -> &str {
        if self.path.is_empty() {
            "."
        } else {
            &self.path
        }
    }
}

/// The folders, in manifest order (None: the manifest maps none), and what is
/// wrong with the extension. Any error-level finding means the map must not be
/// used: a present but invalid map never falls back to writing less.
pub fn read(m: &Manifest) -> (Option<Vec<Folder>>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let Some(ext) = m.extensions.get(EXTENSION) else {
        return (None, out);
    };
    let field = format!("extensions.{EXTENSION}");
    let Value::Object(ext) = ext else {
        out.push(finding(
            m,
            Diagnostic::error(
                Code::ManifestInvalid,
                format!("`{field}` must be a mapping"),
            )
            .field(field)
            .expected("{folders: {<folder>: [<id pattern>, ...]}}")
            .fix("write `folders:` with one entry per folder"),
            &[],
        ));
        return (None, out);
    };
    for key in ext.keys().filter(|k| *k != "folders") {
        let hint = crate::lint::suggest::closest(key, ["folders"]);
        out.push(finding(
            m,
            Diagnostic::error(
                Code::ManifestInvalid,
                format!("unknown key `{key}` in `{field}`"),
            )
            .field(format!("{field}.{key}"))
            .expected(serde_json::json!(["folders"]))
            .actual(key.as_str())
            .fix(format!(
                "{}the only setting is `folders`",
                crate::lint::suggest::did_you_mean(hint)
            )),
            &[key],
        ));
    }
    let Some(map) = ext.get("folders") else {
        return (None, out);
    };
    let field = format!("{field}.folders");
    let Value::Object(map) = map else {
        out.push(finding(
            m,
            Diagnostic::error(
                Code::ManifestInvalid,
                format!("`{field}` must be a mapping of folders to id patterns"),
            )
            .field(field)
            .expected("{<folder>: [<id pattern>, ...]}")
            .fix("write one entry per folder, e.g. `services/billing: [\"billing.*\"]`"),
            &["folders"],
        ));
        return (None, out);
    };
    let mut folders: Vec<Folder> = Vec::new();
    for (key, value) in map {
        let here = format!("{field}.{key}");
        let at = ["folders", key.as_str()];
        let path = match folder_path(key) {
            Ok(p) => p,
            Err(why) => {
                out.push(finding(
                    m,
                    Diagnostic::error(
                        Code::ManifestInvalid,
                        format!("`{here}`: `{key}` is not a folder export can write to: {why}"),
                    )
                    .field(here.clone())
                    .expected("`.` or a relative folder path such as `services/billing`")
                    .actual(key.as_str())
                    .fix("name a folder inside the repository, relative to the manifest, with `/` between its parts"),
                    &at,
                ));
                continue;
            }
        };
        let patterns = match patterns(value) {
            Ok(p) => p,
            Err(why) => {
                out.push(finding(
                    m,
                    Diagnostic::error(Code::ManifestInvalid, format!("`{here}`: {why}"))
                        .field(here.clone())
                        .expected("a list of id patterns, e.g. [\"billing.*\", mission]")
                        .fix("list the ids (or `prefix.*` patterns) of the objects this folder's agents need"),
                    &at,
                ));
                continue;
            }
        };
        let slug = super::targets::slug(&path);
        if let Some(other) = folders
            .iter()
            .find(|f| !path.is_empty() && super::targets::slug(&f.path) == slug)
        {
            out.push(finding(
                m,
                Diagnostic::error(
                    Code::ManifestInvalid,
                    format!(
                        "`{here}`: folders `{}` and `{key}` would share the rules file name `opencontext-{slug}`",
                        other.shown()
                    ),
                )
                .field(here.clone())
                .fix("rename one of the folders, or map their common parent instead"),
                &at,
            ));
            continue;
        }
        if !path.is_empty() && !m.root.join(&path).is_dir() {
            out.push(finding(
                m,
                Diagnostic::warning(
                    Code::ManifestInvalid,
                    format!("`{here}`: there is no folder `{key}`, so no agent works there and export refuses it"),
                )
                .field(here.clone())
                .actual(key.as_str())
                .fix("correct the folder's name, or remove the entry"),
                &at,
            ));
        }
        folders.push(Folder { path, patterns });
    }
    if folders.is_empty() && out.is_empty() {
        out.push(finding(
            m,
            Diagnostic::error(Code::ManifestInvalid, format!("`{field}` maps no folder"))
                .field(field)
                .fix("add a folder and its id patterns, or remove the setting"),
            &["folders"],
        ));
    }
    (Some(folders), out)
}

/// A folder key as a clean relative path: `.` is the manifest folder; anything
/// that climbs out, names git's or ctx's own folder, or needs quoting in a glob
/// is refused rather than normalised, so the file lands where the key says.
fn folder_path(key: &str) -> Result<String, &'static str> {
    if key == "." {
        return Ok(String::new());
    }
    if key.is_empty() || key.starts_with('/') || key.ends_with('/') {
        return Err("it must be relative, without a leading or trailing `/`");
    }
    for seg in key.split('/') {
        match seg {
            "" | "." | ".." => return Err("it may not contain `.`, `..` or empty parts"),
            ".git" | ".ctx" => return Err("git's and ctx's own folders hold no agent files"),
            _ => {}
        }
        let plain = seg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | '+'));
        if !plain {
            return Err(
                "only letters, digits and `.`, `_`, `-`, `@`, `+` are allowed in a folder name",
            );
        }
    }
    Ok(key.to_string())
}

fn patterns(value: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err("expected a list of id patterns".into());
    };
    if items.is_empty() {
        return Err("the list is empty, so the folder's file would carry nothing".into());
    }
    items
        .iter()
        .map(|v| {
            let s = v
                .as_str()
                .ok_or_else(|| format!("`{v}` is not an id pattern (a string)"))?;
            Pattern::parse(s)
                .map(|_| s.to_string())
                .map_err(|e| format!("`{}`: {}", e.pattern, e.reason))
        })
        .collect()
}

fn finding(m: &Manifest, d: Diagnostic, path: &[&str]) -> Diagnostic {
    let mut items = vec![
        PathItem::Key("extensions".into()),
        PathItem::Key(EXTENSION.into()),
    ];
    items.extend(path.iter().map(|p| PathItem::Key((*p).into())));
    let mut d = d.file(m.file.clone());
    if let Some((l, c)) = m.locate(&items) {
        d = d.at(l, c);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_keys_are_clean_relative_paths() {
        assert_eq!(folder_path("."), Ok(String::new()));
        assert_eq!(
            folder_path("services/billing"),
            Ok("services/billing".into())
        );
        assert_eq!(
            folder_path("packages/@acme/ui"),
            Ok("packages/@acme/ui".into())
        );
        for bad in [
            "", "/abs", "a/", "./a", "a/../b", "..", "a//b", ".git", "x/.ctx", "a b", "a:b", "a*",
        ] {
            assert!(folder_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn patterns_must_be_a_non_empty_list_of_scope_patterns() {
        assert_eq!(
            patterns(&serde_json::json!(["billing.*", "mission"])),
            Ok(vec!["billing.*".to_string(), "mission".to_string()])
        );
        assert!(patterns(&serde_json::json!([])).is_err());
        assert!(patterns(&serde_json::json!("billing.*")).is_err());
        assert!(patterns(&serde_json::json!([3])).is_err());
        assert!(patterns(&serde_json::json!(["bill*"])).is_err());
    }
}
