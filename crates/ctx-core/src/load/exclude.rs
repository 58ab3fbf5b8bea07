//! `extensions.ctx.collections.<name>.exclude`: globs (relative to the collection's
//! folder) for files that live beside a collection's objects without being objects,
//! such as a README.md. The OpenContext collection entry is a closed mapping, so the
//! setting lives in ctx's extension namespace and the repository stays valid v1.
//!
//! ```yaml
//! extensions:
//!   ctx.collections:
//!     customers:
//!       exclude: ["README.md", "**/notes/*.md"]
//! ```

use serde_json::Value;

use crate::diag::{Code, Diagnostic};
use crate::manifest::Manifest;
use crate::schema::PathItem;

/// The extension's key.
pub const EXTENSION: &str = "ctx.collections";

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

/// Read the extension and compile its globs into `m.members`; findings for what is wrong.
pub fn apply(m: &mut Manifest) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(ext) = m.extensions.get(EXTENSION).cloned() else {
        return out;
    };
    let field = format!("extensions.{EXTENSION}");
    let Value::Object(map) = ext else {
        out.push(finding(
            m,
            Diagnostic::error(
                Code::ManifestInvalid,
                format!("`{field}` must be a mapping of collection names"),
            )
            .field(field)
            .expected("{<collection>: {exclude: [<glob>, ...]}}")
            .fix("write one entry per collection, e.g. `customers: {exclude: [README.md]}`"),
            &[],
        ));
        return out;
    };
    for (name, spec) in map {
        let here = format!("{field}.{name}");
        if !m.collections.iter().any(|c| c.name == name) {
            let names: Vec<&str> = m.collections.iter().map(|c| c.name.as_str()).collect();
            let hint = crate::lint::suggest::closest(&name, names.iter().copied());
            out.push(finding(
                m,
                Diagnostic::warning(
                    Code::ManifestInvalid,
                    format!("`{here}` names no collection, so it excludes nothing"),
                )
                .field(here.clone())
                .expected(Value::from(names.clone()))
                .actual(name.as_str())
                .fix(format!(
                    "{}name a collection under `collections:`",
                    crate::lint::suggest::did_you_mean(hint)
                )),
                &[&name],
            ));
            continue;
        }
        let Value::Object(spec) = spec else {
            out.push(finding(
                m,
                Diagnostic::error(
                    Code::ManifestInvalid,
                    format!("`{here}` must be a mapping with `exclude`"),
                )
                .field(here.clone())
                .fix("write `exclude: [<glob>, ...]`"),
                &[&name],
            ));
            continue;
        };
        for key in spec.keys().filter(|k| *k != "exclude") {
            let hint = crate::lint::suggest::closest(key, ["exclude"]);
            out.push(finding(
                m,
                Diagnostic::error(
                    Code::ManifestInvalid,
                    format!("unknown key `{key}` in `{here}`"),
                )
                .field(format!("{here}.{key}"))
                .expected(serde_json::json!(["exclude"]))
                .actual(key.as_str())
                .fix(format!(
                    "{}the only setting is `exclude`",
                    crate::lint::suggest::did_you_mean(hint)
                )),
                &[&name, key],
            ));
        }
        let globs: Option<Vec<String>> = match spec.get("exclude") {
            None => Some(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(_) => None,
        };
        let result = match globs {
            Some(globs) => m.members.set_exclude(&name, &globs),
            None => Err(crate::load::matcher::ExcludeError::NotAList),
        };
        if let Err(why) = result {
            out.push(finding(
                m,
                Diagnostic::error(Code::ManifestInvalid, format!("`{here}.exclude` is invalid: {why}"))
                    .field(format!("{here}.exclude"))
                    .expected("a list of globs relative to the collection's folder, e.g. [README.md, \"**/drafts/*\"]")
                    .fix("correct the glob"),
                &[&name, "exclude"],
            ));
        }
    }
    out
}
