//! Which files the manifest loads, compiled once when the manifest is read. The
//! loader's walk, the writers (`add` choosing and checking a path) and the
//! content-source checks all ask this one matcher, so they cannot disagree.

use globset::{GlobBuilder, GlobMatcher};

use crate::fs::{confine, RelPath};
use crate::manifest::{Collection, Entry};
use crate::object::Format;

/// Why a collection's `exclude` globs cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExcludeError {
    #[error("`exclude` must be a list of glob strings")]
    NotAList,
    #[error("`{glob}` is not a valid glob: {why}")]
    Glob { glob: String, why: String },
    #[error("{0}")]
    Set(String),
}

/// A `collections:` source, compiled.
#[derive(Debug, Clone)]
pub struct CompiledCollection {
    pub name: String,
    pub source: Source,
}

/// What a collection source names.
#[derive(Debug, Clone)]
pub enum Source {
    /// A URI with a scheme other than `file`: read by adapters, no local members.
    Remote,
    /// Leaves the manifest folder on its text alone (`../x/**`, `/etc/**`).
    Escapes,
    /// A glob that does not compile; the message says why.
    Invalid(String),
    /// Files below the manifest folder.
    Local(Local),
}

#[derive(Debug, Clone)]
pub struct Local {
    /// The glob (or literal path) as written, without `file://` and `./`.
    pub text: String,
    /// The literal folder prefix the walk starts from (`context/policies`).
    pub base: RelPath,
    /// None for a literal path: a folder (every file below it) or a single file.
    pub glob: Option<GlobMatcher>,
    /// Files the source would match but the manifest's
    /// `extensions.ctx.collections.<name>.exclude` keeps out (paths relative to `base`).
    pub exclude: Option<globset::GlobSet>,
}

impl Local {
    /// Is `rel` one of this source's files (by path; the walk's hidden and
    /// `.gitignore` rules are applied by the caller that has the file system)?
    pub fn matches(&self, rel: &RelPath) -> bool {
        let matched = match &self.glob {
            Some(g) => g.is_match(rel.as_str()),
            None => rel.as_str() == self.text || (rel.is_within(&self.base) && *rel != self.base),
        };
        matched && !self.excludes(rel)
    }

    /// Is `rel` kept out by the collection's `exclude` globs?
    pub fn excludes(&self, rel: &RelPath) -> bool {
        let Some(set) = &self.exclude else {
            return false;
        };
        let inner = if self.base.as_str().is_empty() {
            rel.as_str()
        } else {
            match rel.as_str().strip_prefix(self.base.as_str()) {
                Some(rest) => rest.trim_start_matches('/'),
                None => return false,
            }
        };
        set.is_match(inner)
    }

    /// The folder member ids are derived from: the base (borrowed, so a walk's
    /// members can share it), or the parent of a collection that names a single file.
    pub fn id_base(&self, rel: &RelPath) -> std::borrow::Cow<'_, RelPath> {
        if self.glob.is_none() && rel.as_str() == self.text {
            std::borrow::Cow::Owned(rel.parent())
        } else {
            std::borrow::Cow::Borrowed(&self.base)
        }
    }
}

/// The compiled `context:` entries and `collections:` of one manifest.
#[derive(Debug, Clone, Default)]
pub struct MemberMatcher {
    /// `context:` keys and their local targets (None for a URI or an escaping path).
    pub entries: Vec<(String, Option<RelPath>)>,
    pub collections: Vec<CompiledCollection>,
}

/// Does `s` start with a URI scheme (`https://`, `git://`)?
pub fn is_uri(s: &str) -> bool {
    crate::adapters::scheme(s).is_some()
}

/// The literal folder prefix of a glob: `context/policies/**` → `context/policies`.
fn glob_base(glob: &str) -> String {
    glob.split('/')
        .take_while(|part| !part.contains(['*', '?', '[', '{']))
        .collect::<Vec<_>>()
        .join("/")
}

impl MemberMatcher {
    pub fn compile(entries: &[Entry], collections: &[Collection]) -> MemberMatcher {
        let entries = entries
            .iter()
            .map(|e| {
                let target = e.target.strip_prefix("file://").unwrap_or(&e.target);
                let rel = (!is_uri(target))
                    .then(|| RelPath::parse(target).ok())
                    .flatten();
                (e.key.clone(), rel)
            })
            .collect();
        let collections = collections
            .iter()
            .map(|c| CompiledCollection {
                name: c.name.clone(),
                source: compile_source(&c.source),
            })
            .collect();
        MemberMatcher {
            entries,
            collections,
        }
    }

    /// The collection that loads `rel`, first in manifest order, and the folder its
    /// id derives from. Only files with an object extension are members.
    pub fn collection_of(&self, rel: &RelPath) -> Option<(&str, RelPath)> {
        Format::from_path(rel.as_str())?;
        self.collections.iter().find_map(|c| match &c.source {
            Source::Local(l) if l.matches(rel) => {
                Some((c.name.as_str(), l.id_base(rel).into_owned()))
            }
            _ => None,
        })
    }

    /// The `context:` key whose target is `rel`.
    pub fn entry_of(&self, rel: &RelPath) -> Option<&str> {
        self.entries
            .iter()
            .find(|(_, t)| t.as_ref() == Some(rel))
            .map(|(k, _)| k.as_str())
    }

    /// Would the loader read `rel` as an object (ignoring `.gitignore` and hidden
    /// files, which only the walk sees)?
    pub fn names(&self, rel: &RelPath) -> bool {
        self.entry_of(rel).is_some() || self.collection_of(rel).is_some()
    }

    /// Keep the files `globs` match (relative to the collection's folder) out of
    /// collection `name`. An error names the glob that does not compile.
    pub fn set_exclude(&mut self, name: &str, globs: &[String]) -> Result<(), ExcludeError> {
        let mut set = globset::GlobSetBuilder::new();
        for g in globs {
            let glob = GlobBuilder::new(g.trim_start_matches("./"))
                .literal_separator(true)
                .build()
                .map_err(|e| ExcludeError::Glob {
                    glob: g.clone(),
                    why: e.to_string(),
                })?;
            set.add(glob);
        }
        let set = set.build().map_err(|e| ExcludeError::Set(e.to_string()))?;
        for c in self.collections.iter_mut().filter(|c| c.name == name) {
            if let Source::Local(l) = &mut c.source {
                l.exclude = Some(set.clone());
            }
        }
        Ok(())
    }

    /// The compiled source of collection `name`.
    pub fn collection(&self, name: &str) -> Option<&CompiledCollection> {
        self.collections.iter().find(|c| c.name == name)
    }
}

fn compile_source(source: &str) -> Source {
    let source = source.strip_prefix("file://").unwrap_or(source);
    if is_uri(source) {
        return Source::Remote;
    }
    let text = source.trim_start_matches("./");
    if !confine::lexically_inside(std::path::Path::new(text)) {
        return Source::Escapes;
    }
    let base_text = glob_base(text);
    let Ok(base) = RelPath::parse(&base_text) else {
        return Source::Escapes;
    };
    if base_text == text {
        return Source::Local(Local {
            text: base.to_string(),
            base,
            glob: None,
            exclude: None,
        });
    }
    match GlobBuilder::new(text).literal_separator(true).build() {
        Ok(g) => Source::Local(Local {
            text: text.to_string(),
            base,
            glob: Some(g.compile_matcher()),
            exclude: None,
        }),
        Err(e) => Source::Invalid(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn matcher(sources: &[(&str, &str)]) -> MemberMatcher {
        let cols: Vec<Collection> = sources
            .iter()
            .map(|(n, s)| Collection {
                name: n.to_string(),
                source: s.to_string(),
                defaults: Map::new(),
            })
            .collect();
        let entries = vec![Entry {
            key: "mission".into(),
            target: "./context/mission.md".into(),
        }];
        MemberMatcher::compile(&entries, &cols)
    }

    fn rel(s: &str) -> RelPath {
        RelPath::parse(s).unwrap()
    }

    #[test]
    fn globs_folders_and_files() {
        let m = matcher(&[
            ("policies", "./context/policies/**"),
            ("top", "context/*.md"),
            ("notes", "notes"),
            ("one", "file://single/only.yaml"),
            ("web", "https://example.com/x"),
            ("bad", "context/[x"),
            ("out", "../elsewhere/**"),
        ]);
        let (name, base) = m.collection_of(&rel("context/policies/a/b.md")).unwrap();
        assert_eq!((name, base.as_str()), ("policies", "context/policies"));
        assert_eq!(m.collection_of(&rel("context/x.md")).unwrap().0, "top");
        assert!(m.collection_of(&rel("context/sub/x.md")).is_none());
        assert_eq!(m.collection_of(&rel("notes/n/x.json")).unwrap().0, "notes");
        assert!(m.collection_of(&rel("notes/x.txt")).is_none());
        let (name, base) = m.collection_of(&rel("single/only.yaml")).unwrap();
        assert_eq!((name, base.as_str()), ("one", "single"));
        assert!(matches!(
            m.collection("web").unwrap().source,
            Source::Remote
        ));
        assert!(matches!(
            m.collection("bad").unwrap().source,
            Source::Invalid(_)
        ));
        assert!(matches!(
            m.collection("out").unwrap().source,
            Source::Escapes
        ));
        assert!(m.names(&rel("context/mission.md")));
        assert!(!m.names(&rel("docs/mission.md")));
    }
}
