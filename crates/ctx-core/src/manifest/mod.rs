//! The manifest: discovery, parsing into a typed model, and its own checks.

pub mod discover;
pub mod roles;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::diag::{Code, Diagnostic};
use crate::error::{Error, Result};
use crate::model::Authority;
use crate::resolve::redact::Rule;
use crate::schema::{self, Kind, PathItem};
use crate::yaml::{self, PathSeg};

/// A single-document entry under `context:`.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub target: String,
}

/// A `collections:` member: a glob, plus defaults applied to members that omit them.
#[derive(Debug, Clone)]
pub struct Collection {
    pub name: String,
    pub source: String,
    /// Field defaults from a collection spec object (`type`, `layer`, `owner`, ...).
    pub defaults: Map<String, Value>,
}

pub use roles::{Agent, Role};

/// The parsed manifest. `raw` keeps the document as written (extensions are preserved).
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Absolute path of the manifest file.
    pub path: PathBuf,
    /// The folder holding the manifest: every file reference is relative to it and may not leave it.
    pub root: PathBuf,
    /// The manifest file name relative to `root`.
    pub file: String,
    pub text: String,
    pub raw: Value,
    pub spec_version: String,
    pub id: String,
    pub name: Option<String>,
    pub entries: Vec<Entry>,
    pub collections: Vec<Collection>,
    /// Roles and agents, compiled at load (see [`roles`]); a definition with errors
    /// is kept under its name, and [`Manifest::policy_findings`] holds the errors.
    pub roles: BTreeMap<String, Role>,
    pub agents: BTreeMap<String, Agent>,
    /// Highest authority first; always a permutation of the six levels.
    pub precedence: Vec<Authority>,
    pub tie_breakers: Vec<String>,
    pub default_ttl: Option<chrono::Duration>,
    pub exclude_expired: bool,
    pub stale_is_error: bool,
    pub provenance_required: bool,
    pub require_digest: bool,
    /// The manifest's own redaction rules, compiled.
    pub redact: Vec<Rule>,
    pub defaults: Map<String, Value>,
    pub extensions: Map<String, Value>,
    /// `context:` and `collections:` compiled once: which files the loader reads.
    pub members: crate::load::matcher::MemberMatcher,
    /// Findings about roles, agents and `redact`: any error among them makes every
    /// consumer-facing operation refuse ([`roles::require_sound`]).
    pub policy_findings: Vec<Diagnostic>,
}

fn obj<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

impl Manifest {
    /// Find and load the manifest. Returns it with its own findings
    /// (schema, precedence, role graph); fatal problems are errors.
    pub fn discover(dir: Option<&Path>, cwd: &Path) -> Result<(Manifest, Vec<Diagnostic>)> {
        let located = discover::locate(dir, cwd)?;
        let (manifest, mut diags) = Manifest::load(&located.path)?;
        for other in located.shadowed {
            let name = other
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            diags.push(
                Diagnostic::warning(
                    Code::ManifestInvalid,
                    format!(
                        "{name} is ignored because {} is present in the same folder",
                        manifest.file
                    ),
                )
                .file(name)
                .fix("keep exactly one manifest file per repository"),
            );
        }
        Ok((manifest, diags))
    }

    /// Load a manifest file. A manifest that cannot be loaded at all is an
    /// [`Error::Manifest`] carrying one positioned `manifest-invalid` finding.
    pub fn load(path: &Path) -> Result<(Manifest, Vec<Diagnostic>)> {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let fatal = |d: Diagnostic| Error::Manifest {
            path: path.to_path_buf(),
            diag: Box::new(d.file(file.clone())),
        };
        let bytes = std::fs::read(path).map_err(|e| {
            fatal(
                Diagnostic::error(
                    Code::ManifestInvalid,
                    format!("cannot read the manifest: {e}"),
                )
                .fix("check that the file exists and is readable"),
            )
        })?;
        let root = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let root = root.canonicalize().map_err(|e| Error::io(&root, &e))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() as u32 + 1;
            fatal(
                Diagnostic::error(
                    Code::ManifestInvalid,
                    format!("the manifest is not valid UTF-8 (invalid byte at offset {at})"),
                )
                .line(line)
                .expected("UTF-8 text")
                .fix("re-save the manifest as UTF-8"),
            )
        })?;
        let is_json = file.ends_with(".json");
        let parsed = if is_json {
            crate::json::parse(&text).map_err(|e| (e.line, e.column, e.message))
        } else {
            yaml::parse(&text).map_err(|e| (e.line, e.column, e.message))
        };
        let raw: Value = parsed.map_err(|(line, column, message)| {
            fatal(
                Diagnostic::error(
                    Code::ManifestInvalid,
                    format!("cannot parse the manifest: {message}"),
                )
                .at(line, column)
                .fix("fix the syntax at the position shown"),
            )
        })?;
        if !raw.is_object() {
            return Err(fatal(
                Diagnostic::error(
                    Code::ManifestInvalid,
                    "the manifest must be a mapping with at least `opencontext` and `id`",
                )
                .line(1)
                .expected("a mapping (key: value pairs)")
                .fix("start the manifest with `opencontext: \"1.0\"` and `id: <namespace>`"),
            ));
        }
        let spec_version = raw
            .get("opencontext")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let major = spec_version.split('.').next().unwrap_or("");
        if !spec_version.is_empty() && major != "1" {
            let mut d = Diagnostic::error(
                Code::ManifestInvalid,
                format!(
                    "OpenContext version {spec_version} is not supported; ctx implements major version 1 (spec {})",
                    crate::SPEC_VERSION
                ),
            )
            .field("opencontext")
            .expected("1.x")
            .actual(spec_version.as_str())
            .fix(format!(
                "use a ctx release that supports version {major}, or declare `opencontext: \"1.0\"`"
            ));
            if let Some((l, c)) = locate_in(&text, is_json, &[PathItem::Key("opencontext".into())])
            {
                d = d.at(l, c);
            }
            return Err(fatal(d));
        }
        let mut m = Manifest {
            path: path.to_path_buf(),
            root,
            file,
            text,
            spec_version,
            id: raw
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: raw.get("name").and_then(Value::as_str).map(str::to_string),
            entries: Vec::new(),
            collections: Vec::new(),
            roles: BTreeMap::new(),
            agents: BTreeMap::new(),
            precedence: Authority::ALL.to_vec(),
            tie_breakers: vec![
                "version".into(),
                "updated".into(),
                "confidence".into(),
                "id".into(),
            ],
            default_ttl: None,
            exclude_expired: true,
            stale_is_error: false,
            provenance_required: false,
            require_digest: false,
            redact: Vec::new(),
            defaults: Map::new(),
            extensions: Map::new(),
            policy_findings: Vec::new(),
            raw: Value::Null,
            members: Default::default(),
        };
        let mut diags = Vec::new();
        for v in schema::check(Kind::Manifest, &raw) {
            // Roles, agents and redaction rules are checked (more closely) as they compile.
            if compiled_path(&v.path) {
                continue;
            }
            let mut d = Diagnostic::error(Code::ManifestInvalid, v.message)
                .file(m.file.clone())
                .fix("correct the manifest field (see `ctx schema manifest`)");
            if !v.field.is_empty() {
                d = d.field(v.field);
            }
            if let Some(e) = v.expected {
                d = d.expected(e);
            }
            if let Some(a) = v.actual {
                d = d.actual(a);
            }
            if let Some((line, col)) = m.locate(&v.path) {
                d = d.at(line, col);
            }
            diags.push(d);
        }
        m.extract(&raw, &mut diags);
        m.members = crate::load::matcher::MemberMatcher::compile(&m.entries, &m.collections);
        let compiled = roles::compile(&m, &raw);
        m.roles = compiled.roles;
        m.agents = compiled.agents;
        m.redact = compiled.redact;
        m.raw = raw;
        diags.extend(compiled.findings.iter().cloned());
        m.policy_findings = compiled.findings;
        Ok((m, diags))
    }

    /// Line and column of a manifest path (error path only: re-parses the text).
    pub fn locate(&self, path: &[PathItem]) -> Option<(u32, u32)> {
        locate_in(&self.text, self.file.ends_with(".json"), path)
    }

    fn extract(&mut self, raw: &Value, diags: &mut Vec<Diagnostic>) {
        if let Some(ctx) = obj(raw, "context") {
            for (k, v) in ctx {
                if let Some(t) = v.as_str() {
                    self.entries.push(Entry {
                        key: k.clone(),
                        target: t.to_string(),
                    });
                }
            }
        }
        if let Some(cols) = obj(raw, "collections") {
            for (k, v) in cols {
                match v {
                    Value::String(s) => self.collections.push(Collection {
                        name: k.clone(),
                        source: s.clone(),
                        defaults: Map::new(),
                    }),
                    Value::Object(spec) => {
                        if let Some(src) = spec.get("source").and_then(Value::as_str) {
                            let mut defaults = spec.clone();
                            defaults.remove("source");
                            self.collections.push(Collection {
                                name: k.clone(),
                                source: src.to_string(),
                                defaults,
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(auth) = obj(raw, "authority") {
            if let Some(list) = auth.get("precedence").and_then(Value::as_array) {
                let parsed: Vec<Authority> = list
                    .iter()
                    .filter_map(|v| v.as_str().and_then(Authority::parse))
                    .collect();
                let mut sorted = parsed.clone();
                sorted.sort();
                sorted.dedup();
                if sorted.len() == Authority::ALL.len() && parsed.len() == Authority::ALL.len() {
                    self.precedence = parsed;
                } else {
                    let missing: Vec<&str> = Authority::ALL
                        .iter()
                        .filter(|a| !parsed.contains(a))
                        .map(|a| a.as_str())
                        .collect();
                    let path = [
                        PathItem::Key("authority".into()),
                        PathItem::Key("precedence".into()),
                    ];
                    let mut d = Diagnostic::error(
                        Code::ManifestInvalid,
                        "authority.precedence must list each of the six authority levels exactly once",
                    )
                    .file(self.file.clone())
                    .field("authority.precedence")
                    .expected(Value::from(Authority::names()))
                    .actual(Value::Array(list.clone()))
                    .fix(if missing.is_empty() {
                        "remove the unknown or repeated levels".to_string()
                    } else {
                        format!("add the missing level(s): {}", missing.join(", "))
                    });
                    if let Some((l, c)) = self.locate(&path) {
                        d = d.at(l, c);
                    }
                    diags.push(d);
                }
            }
            if let Some(list) = auth.get("tie_breakers").and_then(Value::as_array) {
                self.tie_breakers = list
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
            }
        }
        if let Some(f) = obj(raw, "freshness") {
            self.default_ttl = f
                .get("default_ttl")
                .and_then(Value::as_str)
                .and_then(crate::time::parse_duration);
            self.exclude_expired = f
                .get("exclude_expired")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            self.stale_is_error = f
                .get("stale_is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
        }
        if let Some(p) = obj(raw, "provenance") {
            self.provenance_required = p.get("required").and_then(Value::as_bool).unwrap_or(false);
            self.require_digest = p
                .get("require_digest")
                .and_then(Value::as_bool)
                .unwrap_or(false);
        }
        if let Some(d) = obj(raw, "defaults") {
            self.defaults = d.clone();
        }
        if let Some(e) = obj(raw, "extensions") {
            self.extensions = e.clone();
        }
    }

    /// A namespaced extension block of the manifest, e.g. `ctx.keys`.
    pub fn extension(&self, name: &str) -> Option<&Value> {
        self.extensions.get(name)
    }
}

/// Is a schema path under `roles`, `agents` or the top-level `redact` (extensions aside)?
fn compiled_path(path: &[PathItem]) -> bool {
    match path {
        [PathItem::Key(top), ..] if top == "redact" => true,
        [PathItem::Key(top), PathItem::Key(_), PathItem::Key(k), ..]
            if (top == "roles" || top == "agents") && k == "extensions" =>
        {
            false
        }
        [PathItem::Key(top), ..] => top == "roles" || top == "agents",
        _ => false,
    }
}

/// Locate a path inside a YAML or JSON text (JSON is YAML 1.2, so one locator serves both).
pub fn locate_in(text: &str, _is_json: bool, path: &[PathItem]) -> Option<(u32, u32)> {
    let segs: Vec<PathSeg<'_>> = path
        .iter()
        .map(|p| match p {
            PathItem::Key(k) => PathSeg::Key(k.as_str()),
            PathItem::Index(i) => PathSeg::Index(*i),
        })
        .collect();
    // Fall back to the closest ancestor that exists (e.g. for a missing key).
    (0..=segs.len())
        .rev()
        .find_map(|n| yaml::locate(text, &segs[..n]))
}
