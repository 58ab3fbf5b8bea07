//! Whether a host will read a generated file where it sits. The complaint heard
//! most about agent instruction files is one that looks installed and is silently
//! ignored: a Cursor rule saved as `.md`, a Copilot file without the
//! `.instructions.md` suffix or `applyTo`, a Windsurf rule cut off at its size
//! limit, an AGENTS.md in a folder no agent works in. `ctx validate` reports these
//! for every generated file (`lint::agent_files`); `ctx export` warns as it writes.

use serde_json::Value;

use super::targets::{Layout, Target, WINDSURF_MAX_CHARS};

/// Names of the instruction files themselves, which are no work for an agent.
pub const INSTRUCTION_FILES: [&str; 3] = ["AGENTS.md", "CLAUDE.md", "GEMINI.md"];

/// What the checks need to know about the tree around a file.
pub trait Tree {
    /// Is there a file under `dir` (relative to the repository folder; never the
    /// folder itself) besides agent instruction files?
    fn has_work_under(&self, dir: &str) -> bool;
    /// Does one of `globs` (relative to the repository folder) match a file?
    /// None when the caller does not know.
    fn matches_any(&self, globs: &[String]) -> Option<bool>;
}

/// Where a file sits.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// `/`-separated, relative to the repository (manifest) folder.
    pub rel: &'a str,
    /// Where the repository folder sits in git's work tree (`docs/ctx`), when that
    /// is not its root: hosts that read only the work tree's root then never see
    /// a file here.
    pub below_git_root: Option<&'a str>,
}

/// Why a host will not read a file, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misplaced {
    pub reason: String,
    pub fix: String,
}

fn misplaced(reason: impl Into<String>, fix: impl Into<String>) -> Option<Misplaced> {
    Some(Misplaced {
        reason: reason.into(),
        fix: fix.into(),
    })
}

fn split_name(rel: &str) -> (&str, &str) {
    match rel.rfind('/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => ("", rel),
    }
}

/// Check a file generated for `target`: `text` is its content (at least through
/// its front matter), `chars` its length in characters.
pub fn check(
    target: Target,
    place: Place<'_>,
    text: &str,
    chars: usize,
    tree: &dyn Tree,
) -> Option<Misplaced> {
    let rel = place.rel;
    let host = target.host();
    let (dir, name) = split_name(rel);
    match target.layout() {
        Layout::Nested(want) => {
            if name != want {
                let instead = if dir.is_empty() {
                    want.to_string()
                } else {
                    format!("{dir}/{want}")
                };
                return misplaced(
                    format!("{host} reads instruction files named exactly `{want}`, so `{rel}` is never opened"),
                    format!("write it as `{instead}` (export --target {} without -o writes `{want}`)", target.name()),
                );
            }
            // `.claude/CLAUDE.md` is its folder's file too.
            let folder = match split_name(dir) {
                (parent, ".claude") if target == Target::ClaudeMd => parent,
                _ => dir,
            };
            if !folder.is_empty() && !tree.has_work_under(folder) {
                return misplaced(
                    format!("`{folder}/` holds no file besides agent instructions, and {host} reads a nested `{want}` only while working on files under its folder"),
                    "write it into the repository folder or a folder with the files it is about (see extensions.ctx.export.folders)",
                );
            }
            None
        }
        Layout::Fixed(path) => {
            if rel != path {
                let (_, want_name) = split_name(path);
                let reason = if name == want_name {
                    format!("{host} reads `{path}` only at the repository root, so `{rel}` is never opened")
                } else {
                    format!("{host} reads repository-wide instructions only from `{path}`, so `{rel}` is never opened")
                };
                return misplaced(
                    reason,
                    format!(
                        "export --target {} without -o writes `{path}`",
                        target.name()
                    ),
                );
            }
            at_git_root(target, path, place)
        }
        Layout::Rules { dir: rules, suffix } => {
            // Copilot reads `.github/instructions/` at the root only; the others
            // also read a rules folder nested in a subfolder.
            let nested = target != Target::CopilotRules;
            let inside = rel.starts_with(&format!("{rules}/"))
                || nested && rel.contains(&format!("/{rules}/"));
            if !inside {
                return misplaced(
                    format!(
                        "{host} reads these rules only from `{rules}/`, so `{rel}` is never opened"
                    ),
                    format!(
                        "export --target {} without -o writes `{}`",
                        target.name(),
                        target.default_path()
                    ),
                );
            }
            if !name.ends_with(suffix) || name.len() == suffix.len() {
                let reason = match target {
                    Target::CursorRules => format!("Cursor reads only `.mdc` files in `{rules}/`, so `{name}` is ignored"),
                    Target::CopilotRules => format!("{host} reads only files named `<name>.instructions.md` in `{rules}/`, so `{name}` is ignored"),
                    _ => format!("{host} reads only `<name>{suffix}` files in `{rules}/`, so `{name}` is ignored"),
                };
                let stem = name
                    .split('.')
                    .next()
                    .filter(|s| !s.is_empty())
                    .unwrap_or("opencontext");
                return misplaced(reason, format!("rename it `{dir}/{stem}{suffix}`"));
            }
            if target == Target::CopilotRules {
                if let Some(m) = at_git_root(target, rules, place) {
                    return Some(m);
                }
            }
            if target == Target::WindsurfRules && chars > WINDSURF_MAX_CHARS {
                return misplaced(
                    format!("Windsurf reads the first {WINDSURF_MAX_CHARS} characters of a rule file and drops the rest, and `{rel}` has {chars}"),
                    "carry less (narrow it with --include, split it with --per-folder) or export --target agents-md, which Windsurf reads too",
                );
            }
            front_matter(target, rel, text, tree)
        }
    }
}

/// Copilot in the IDE and on GitHub reads `.github/` at the root of the work tree.
fn at_git_root(target: Target, path: &str, place: Place<'_>) -> Option<Misplaced> {
    let below = place.below_git_root.filter(|p| !p.is_empty())?;
    misplaced(
        format!("{} reads `{path}` at the root of the git work tree, and this repository sits in `{below}/`", target.host()),
        format!("export with -o pointing at the work tree's root `{path}` (a path outside `{below}/`)"),
    )
}

/// The front matter a rules host needs to apply the file at all.
fn front_matter(target: Target, rel: &str, text: &str, tree: &dyn Tree) -> Option<Misplaced> {
    let host = target.host();
    let yaml = match crate::frontmatter::split(text) {
        Ok(s) => s.yaml,
        Err(e) => {
            return misplaced(
                format!("the front matter of `{rel}` never closes ({e}), so {host} cannot read its settings"),
                "regenerate it with ctx export",
            )
        }
    };
    let needs = target != Target::ClaudeRules;
    let fm = match yaml.map(crate::yaml::parse) {
        None if needs => {
            return misplaced(
                format!("`{rel}` has no front matter, so {host} never applies it on its own"),
                "regenerate it with ctx export",
            )
        }
        None => return None,
        Some(Err(e)) => {
            return misplaced(
                format!("the front matter of `{rel}` is not valid YAML ({e}), so {host} ignores its settings"),
                "regenerate it with ctx export",
            )
        }
        Some(Ok(v)) => v,
    };
    let globs_field = match target {
        Target::CursorRules => match &fm["alwaysApply"] {
            Value::Bool(true) => return None,
            Value::Bool(false) | Value::Null => "globs",
            other => {
                return misplaced(
                    format!("`alwaysApply` in `{rel}` is {other}, not true or false, so Cursor does not apply it always"),
                    "write `alwaysApply: true` (no quotes), or regenerate it with ctx export",
                )
            }
        },
        Target::CopilotRules => "applyTo",
        Target::ClaudeRules => "paths",
        Target::WindsurfRules => match fm["trigger"].as_str() {
            Some("always_on") | Some("manual") | Some("model_decision") => return None,
            Some("glob") => "globs",
            _ => {
                return misplaced(
                    format!("`{rel}` has no `trigger:` of always_on, manual, model_decision or glob, so Windsurf never applies it"),
                    "write `trigger: always_on`, or regenerate it with ctx export",
                )
            }
        },
        _ => return None,
    };
    let globs = match globs_of(&fm[globs_field]) {
        Some(g) => g,
        None => {
            return misplaced(
                format!("`{globs_field}` in `{rel}` is neither a glob nor a list of globs, so {host} applies it to no file"),
                "regenerate it with ctx export",
            )
        }
    };
    if globs.is_empty() {
        return match target {
            // Cursor: a description alone is an agent-requested rule.
            Target::CursorRules if fm["description"].is_string() => None,
            Target::ClaudeRules => None,
            _ => misplaced(
                format!("`{rel}` has no `{globs_field}`, so {host} applies it to no file"),
                format!("give it `{globs_field}:` globs of the files it is for, or regenerate it with ctx export"),
            ),
        };
    }
    match tree.matches_any(&globs) {
        Some(false) => misplaced(
            format!("the `{globs_field}` of `{rel}` ({}) matches no file in the repository, so {host} never applies it", globs.join(", ")),
            "map the folder the files are in (extensions.ctx.export.folders), or remove the stale file",
        ),
        _ => None,
    }
}

/// Globs as the hosts write them: a comma-separated string or a list of strings.
fn globs_of(v: &Value) -> Option<Vec<String>> {
    let split = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect()
    };
    match v {
        Value::Null => Some(Vec::new()),
        Value::String(s) => Some(split(s)),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(split))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.concat()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        work: &'static [&'static str],
        matches: Option<bool>,
    }

    impl Tree for Fake {
        fn has_work_under(&self, dir: &str) -> bool {
            self.work.contains(&dir)
        }
        fn matches_any(&self, _: &[String]) -> Option<bool> {
            self.matches
        }
    }

    const TREE: Fake = Fake {
        work: &["services/billing"],
        matches: Some(true),
    };

    fn at(target: Target, rel: &str, text: &str) -> Option<Misplaced> {
        let place = Place {
            rel,
            below_git_root: None,
        };
        check(target, place, text, text.chars().count(), &TREE)
    }

    #[test]
    fn what_export_writes_is_read_where_it_writes_it() {
        let about = "OpenContext repository acme for role support";
        for t in super::super::targets::ALL {
            for scope in [
                super::super::Scope::Repository,
                super::super::Scope::Folder("services/billing"),
            ] {
                let Some(path) = t.path(scope) else { continue };
                let fm = t
                    .front_matter(scope, about)
                    .map(|f| format!("---\n{f}---\n"))
                    .unwrap_or_default();
                let text = format!("{fm}<!-- generated by ctx export ({}) -->\n# x\n", t.name());
                assert_eq!(at(t, &path, &text), None, "{t:?} {path}\n{text}");
            }
        }
    }

    #[test]
    fn misplaced_files_are_named_with_the_reason() {
        let cursor = "---\nglobs: src/**\nalwaysApply: false\n---\nx\n";
        let m = at(Target::CursorRules, ".cursor/rules/a.md", cursor).unwrap();
        assert!(m.reason.contains("only `.mdc`"), "{m:?}");
        assert!(m.fix.contains(".cursor/rules/a.mdc"), "{m:?}");
        let m = at(Target::CursorRules, "docs/rules.mdc", cursor).unwrap();
        assert!(m.reason.contains("only from `.cursor/rules/`"), "{m:?}");
        let quoted = "---\nalwaysApply: \"true\"\n---\nx\n";
        assert!(at(Target::CursorRules, ".cursor/rules/a.mdc", quoted).is_some());

        let m = at(
            Target::CopilotRules,
            ".github/instructions/x.md",
            "---\napplyTo: \"**\"\n---\n",
        )
        .unwrap();
        assert!(m.reason.contains(".instructions.md"), "{m:?}");
        let m = at(
            Target::CopilotRules,
            ".github/instructions/x.instructions.md",
            "---\ndescription: d\n---\n",
        )
        .unwrap();
        assert!(m.reason.contains("no `applyTo`"), "{m:?}");
        assert!(at(
            Target::CopilotRules,
            ".github/instructions/x.instructions.md",
            "# no front matter\n"
        )
        .is_some());
        let m = at(
            Target::CopilotMd,
            "docs/.github/copilot-instructions.md",
            "x",
        )
        .unwrap();
        assert!(m.reason.contains("only at the repository root"), "{m:?}");

        let big = format!(
            "---\ntrigger: always_on\n---\n{}",
            "é".repeat(WINDSURF_MAX_CHARS)
        );
        let m = at(Target::WindsurfRules, ".windsurf/rules/a.md", &big).unwrap();
        assert!(m.reason.contains("12000 characters"), "{m:?}");
        assert!(at(
            Target::WindsurfRules,
            ".windsurf/rules/a.md",
            "---\ntrigger: sometimes\n---\n"
        )
        .is_some());
        assert!(at(
            Target::WindsurfRules,
            ".windsurf/rules/a.md",
            "---\ntrigger: glob\n---\n"
        )
        .is_some());

        let m = at(Target::AgentsMd, "docs/agents.md", "x").unwrap();
        assert!(m.fix.contains("docs/AGENTS.md"), "{m:?}");
        let m = at(Target::AgentsMd, "out/AGENTS.md", "x").unwrap();
        assert!(m.reason.contains("`out/` holds no file"), "{m:?}");
        assert_eq!(
            at(Target::AgentsMd, "services/billing/AGENTS.md", "x"),
            None
        );
        assert_eq!(
            at(Target::ClaudeMd, "services/billing/.claude/CLAUDE.md", "x"),
            None
        );
        assert!(at(Target::ClaudeMd, "out/.claude/CLAUDE.md", "x").is_some());

        let broken = "---\npaths: [a\n---\n";
        assert!(at(Target::ClaudeRules, ".claude/rules/a.md", broken).is_some());
        assert_eq!(
            at(
                Target::ClaudeRules,
                ".claude/rules/a.md",
                "no front matter\n"
            ),
            None
        );
    }

    #[test]
    fn globs_that_match_nothing_and_a_repository_below_the_git_root() {
        let none = Fake {
            work: &[],
            matches: Some(false),
        };
        let place = Place {
            rel: ".github/instructions/opencontext-gone.instructions.md",
            below_git_root: None,
        };
        let text = "---\napplyTo: \"gone/**\"\n---\n";
        let m = check(Target::CopilotRules, place, text, 1, &none).unwrap();
        assert!(m.reason.contains("matches no file"), "{m:?}");
        let place = Place {
            rel: ".github/copilot-instructions.md",
            below_git_root: Some("docs/ctx"),
        };
        let m = check(Target::CopilotMd, place, "x", 1, &none).unwrap();
        assert!(m.reason.contains("sits in `docs/ctx/`"), "{m:?}");
        assert_eq!(
            globs_of(&serde_json::json!("a/**, b/**")),
            Some(vec!["a/**".into(), "b/**".into()])
        );
        assert_eq!(
            globs_of(&serde_json::json!(["a/**"])),
            Some(vec!["a/**".into()])
        );
        assert_eq!(globs_of(&serde_json::json!(3)), None);
    }
}
