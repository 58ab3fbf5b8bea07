//! The hosts `ctx export` writes for: where each one looks for its instruction
//! files and the front matter it parses. Each host's documentation is cited where
//! its target is defined; [`super::placement`] holds the rules a file must meet to
//! be read at all.

use crate::model::Classification;

/// An agent instruction file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// AGENTS.md, the cross-agent convention (<https://agents.md>): read in the folder
    /// it sits in and below; the nearest one to the file being edited wins.
    AgentsMd,
    /// CLAUDE.md (Claude Code, <https://code.claude.com/docs/en/memory>): every
    /// ancestor's is loaded at launch, a subfolder's when Claude reads files there.
    ClaudeMd,
    /// `.claude/rules/*.md` (same page, "path-specific rules"): no front matter
    /// loads it always, a `paths:` list of globs only for matching files.
    ClaudeRules,
    /// `.github/copilot-instructions.md` (GitHub Copilot, repository-wide:
    /// <https://docs.github.com/en/copilot/how-tos/configure-custom-instructions/add-repository-instructions>):
    /// plain Markdown at the repository root.
    CopilotMd,
    /// `.github/instructions/<name>.instructions.md` (same page, path-specific):
    /// `applyTo:` front matter, comma-separated globs of the files it applies to.
    CopilotRules,
    /// `.cursor/rules/*.mdc` (Cursor project rules, <https://docs.cursor.com/context/rules>):
    /// front matter `description`, `globs`, `alwaysApply`.
    CursorRules,
    /// GEMINI.md (Gemini CLI, <https://geminicli.com/docs/cli/gemini-md>): the
    /// workspace's and its ancestors', and a folder's just in time when a tool
    /// reads files there.
    GeminiMd,
    /// `.windsurf/rules/*.md` (Windsurf Cascade, <https://docs.windsurf.com/windsurf/cascade/memories>):
    /// front matter `trigger:` (`always_on`, `manual`, `model_decision`, `glob`)
    /// with `globs:`; a file is read up to a size limit ([`WINDSURF_MAX_CHARS`]).
    WindsurfRules,
}

/// Every target, in `--target` order.
pub const ALL: [Target; 8] = [
    Target::AgentsMd,
    Target::ClaudeMd,
    Target::ClaudeRules,
    Target::CopilotMd,
    Target::CopilotRules,
    Target::CursorRules,
    Target::GeminiMd,
    Target::WindsurfRules,
];

/// Windsurf reads this many characters of a rule file and drops the rest (the
/// current documentation's figure; older releases cut at 6,000).
pub const WINDSURF_MAX_CHARS: usize = 12_000;

/// How a host finds a target's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A file of this name, read for the folder it sits in and everything below
    /// it: a subfolder's own file is nearer, so it wins there.
    Nested(&'static str),
    /// One file at this path from the repository root.
    Fixed(&'static str),
    /// Files ending in `suffix` in the rules folder `dir`, each saying in its
    /// front matter which files it applies to.
    Rules {
        dir: &'static str,
        suffix: &'static str,
    },
}

/// What one generated file covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// The whole repository.
    Repository,
    /// The files under this folder (a `/`-separated path from the repository
    /// root, never empty).
    Folder(&'a str),
}

/// The stem of every rules file export writes.
const RULES_STEM: &str = "opencontext";

impl Target {
    /// The `--target` value.
    pub fn name(self) -> &'static str {
        match self {
            Target::AgentsMd => "agents-md",
            Target::ClaudeMd => "claude-md",
            Target::ClaudeRules => "claude-rules",
            Target::CopilotMd => "copilot-md",
            Target::CopilotRules => "copilot-rules",
            Target::CursorRules => "cursor-rules",
            Target::GeminiMd => "gemini-md",
            Target::WindsurfRules => "windsurf-rules",
        }
    }

    /// The target a marker names.
    pub fn parse(name: &str) -> Option<Target> {
        ALL.into_iter().find(|t| t.name() == name)
    }

    /// The host that reads it, as people call it.
    pub fn host(self) -> &'static str {
        match self {
            Target::AgentsMd => "an AGENTS.md host",
            Target::ClaudeMd | Target::ClaudeRules => "Claude Code",
            Target::CopilotMd | Target::CopilotRules => "GitHub Copilot",
            Target::CursorRules => "Cursor",
            Target::GeminiMd => "Gemini CLI",
            Target::WindsurfRules => "Windsurf",
        }
    }

    /// The most sensitive classification the file may carry unless raised with
    /// `--allow-classification`: agent instruction files are meant for git, where
    /// everyone who can clone the repository reads them.
    pub fn ceiling(self) -> Classification {
        Classification::Internal
    }

    pub fn layout(self) -> Layout {
        match self {
            Target::AgentsMd => Layout::Nested("AGENTS.md"),
            Target::ClaudeMd => Layout::Nested("CLAUDE.md"),
            Target::GeminiMd => Layout::Nested("GEMINI.md"),
            Target::CopilotMd => Layout::Fixed(".github/copilot-instructions.md"),
            Target::ClaudeRules => Layout::Rules {
                dir: ".claude/rules",
                suffix: ".md",
            },
            Target::CopilotRules => Layout::Rules {
                dir: ".github/instructions",
                suffix: ".instructions.md",
            },
            Target::CursorRules => Layout::Rules {
                dir: ".cursor/rules",
                suffix: ".mdc",
            },
            Target::WindsurfRules => Layout::Rules {
                dir: ".windsurf/rules",
                suffix: ".md",
            },
        }
    }

    /// Where the file goes, relative to the repository folder, when `--output` is not given.
    pub fn default_path(self) -> String {
        self.path(Scope::Repository)
            .expect("every target has a repository-wide file")
    }

    /// Where the file for `scope` goes (None: the host has no per-folder file,
    /// see [`Target::per_folder`]).
    pub fn path(self, scope: Scope<'_>) -> Option<String> {
        match (self.layout(), scope) {
            (Layout::Nested(name), Scope::Repository)
            | (Layout::Fixed(name), Scope::Repository) => Some(name.to_string()),
            (Layout::Nested(name), Scope::Folder(f)) => Some(format!("{f}/{name}")),
            (Layout::Fixed(_), Scope::Folder(_)) => None,
            (Layout::Rules { dir, suffix }, Scope::Repository) => {
                Some(format!("{dir}/{RULES_STEM}{suffix}"))
            }
            (Layout::Rules { dir, suffix }, Scope::Folder(f)) => {
                Some(format!("{dir}/{RULES_STEM}-{}{suffix}", slug(f)))
            }
        }
    }

    /// Can one file per folder be written? Not for Copilot's single
    /// repository-wide file (its per-folder form is `copilot-rules`).
    pub fn per_folder(self) -> bool {
        !matches!(self.layout(), Layout::Fixed(_))
    }

    /// The YAML front matter (without its `---` fences) the host parses to learn
    /// which files the file applies to; None: it has none. `about` says whose
    /// context it is (for the descriptions some hosts show).
    pub fn front_matter(self, scope: Scope<'_>, about: &str) -> Option<String> {
        let glob = |f: &str| format!("{f}/**");
        match (self, scope) {
            (Target::CursorRules, Scope::Repository) => Some(format!(
                "description: {}\nglobs:\nalwaysApply: true\n",
                yaml_scalar(&format!("Context from {about}"))
            )),
            // Cursor reads its globs as a plain comma-separated string, not a
            // quoted one; a folder path of the characters folders may use is a
            // valid plain scalar.
            (Target::CursorRules, Scope::Folder(f)) => Some(format!(
                "description: {}\nglobs: {}\nalwaysApply: false\n",
                yaml_scalar(&format!("Context from {about}, for files under {f}")),
                yaml_scalar(&glob(f))
            )),
            (Target::CopilotRules, Scope::Repository) => Some("applyTo: \"**\"\n".into()),
            (Target::CopilotRules, Scope::Folder(f)) => {
                Some(format!("applyTo: {}\n", quoted(&glob(f))))
            }
            (Target::ClaudeRules, Scope::Repository) => None,
            (Target::ClaudeRules, Scope::Folder(f)) => {
                Some(format!("paths:\n  - {}\n", quoted(&glob(f))))
            }
            (Target::WindsurfRules, Scope::Repository) => Some("trigger: always_on\n".into()),
            (Target::WindsurfRules, Scope::Folder(f)) => {
                Some(format!("trigger: glob\nglobs: {}\n", quoted(&glob(f))))
            }
            (Target::AgentsMd | Target::ClaudeMd | Target::CopilotMd | Target::GeminiMd, _) => None,
        }
    }

    /// The file's heading.
    pub fn title(self) -> &'static str {
        match self {
            Target::AgentsMd => "AGENTS.md",
            Target::ClaudeMd => "CLAUDE.md",
            Target::GeminiMd => "GEMINI.md",
            Target::CopilotMd => "Copilot instructions",
            Target::ClaudeRules
            | Target::CopilotRules
            | Target::CursorRules
            | Target::WindsurfRules => "Project context",
        }
    }
}

/// A folder path as one file-name component: `services/billing` → `services-billing`.
pub fn slug(folder: &str) -> String {
    folder.replace('/', "-")
}

/// `s` as a YAML double-quoted scalar (a JSON string is one).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// `s` as a plain YAML scalar when it reads back as the same string, else quoted.
fn yaml_scalar(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_'))
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " ._/+-*,()".contains(c))
        && !s.ends_with(' ')
        && !matches!(s, "true" | "false" | "null" | "yes" | "no" | "on" | "off");
    if plain {
        s.to_string()
    } else {
        quoted(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_paths_follow_each_hosts_layout() {
        for t in ALL {
            assert_eq!(Target::parse(t.name()), Some(t));
            assert!(t.default_path().ends_with(match t.layout() {
                Layout::Nested(n) | Layout::Fixed(n) => n,
                Layout::Rules { suffix, .. } => suffix,
            }));
        }
        assert_eq!(Target::parse("agents"), None);
        let billing = Scope::Folder("services/billing");
        assert_eq!(
            Target::AgentsMd.path(billing).as_deref(),
            Some("services/billing/AGENTS.md")
        );
        assert_eq!(
            Target::CopilotRules.path(billing).as_deref(),
            Some(".github/instructions/opencontext-services-billing.instructions.md")
        );
        assert_eq!(
            Target::CursorRules.default_path(),
            ".cursor/rules/opencontext.mdc"
        );
        assert_eq!(Target::CopilotMd.path(billing), None);
        assert!(!Target::CopilotMd.per_folder());
    }

    #[test]
    fn front_matter_is_valid_yaml_naming_the_folder() {
        let about = "OpenContext repository acme for role support";
        for t in ALL {
            for scope in [Scope::Repository, Scope::Folder("services/billing")] {
                let Some(fm) = t.front_matter(scope, about) else {
                    continue;
                };
                let v = crate::yaml::parse(&fm).unwrap_or_else(|e| panic!("{t:?}: {e}\n{fm}"));
                assert!(v.is_object(), "{fm}");
                if let Scope::Folder(_) = scope {
                    assert!(fm.contains("services/billing/**"), "{fm}");
                }
            }
        }
        let odd = Target::CursorRules
            .front_matter(Scope::Repository, "repository acme for role `a: b` #x")
            .unwrap();
        let v = crate::yaml::parse(&odd).unwrap();
        assert_eq!(
            v["description"],
            "Context from repository acme for role `a: b` #x"
        );
        assert_eq!(yaml_scalar("true"), "\"true\"");
        assert_eq!(yaml_scalar("services/billing/**"), "services/billing/**");
    }
}
