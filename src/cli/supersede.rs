//! `ctx supersede <id>`: a new version that declares what it replaces. The previous
//! version stays on disk — that is what lets anyone answer "what did we believe in March".

use std::path::Path;

use clap::Args;
use serde_json::{Map, Value};

use ctx_core::error::{Error, Exit, Result};
use ctx_core::evidence::{Record, WriteKind};
use ctx_core::load::Repo;
use ctx_core::manifest::Manifest;
use ctx_core::model::{ObjectRef, Status};
use ctx_core::object::{ContextObject, Format};
use ctx_core::validate::Index;
use ctx_core::view::View;
use ctx_core::write::{self, emit, FileWrite};

use super::add::{self, WriteArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct SupersedeArgs {
    /// The id to supersede (`id@version` to replace one specific active version).
    pub id: String,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// Fields a new version never inherits: identity and chain (set afresh), timestamps,
/// and approvals and reviews, which were given to the previous content.
const NOT_INHERITED: [&str; 6] = [
    "version",
    "supersedes",
    "superseded_by",
    "created",
    "updated",
    "content",
];

/// `context/pricing/enterprise.v2.md` beside `context/pricing/enterprise.md`.
fn sibling(rel: &str, version: u64) -> String {
    let (dir, name) = rel.rsplit_once('/').map_or(("", rel), |(d, n)| (d, n));
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, "md"));
    let stem = match stem.rsplit_once(".v") {
        Some((s, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => s,
        _ => stem,
    };
    let file = format!("{stem}.v{version}.{ext}");
    if dir.is_empty() {
        file
    } else {
        format!("{dir}/{file}")
    }
}

/// The previous version's declared fields, made fit for a successor.
fn inherited(prev: &ContextObject) -> Map<String, Value> {
    let mut f: Map<String, Value> = prev
        .fields()
        .into_iter()
        .filter(|(k, _)| !NOT_INHERITED.contains(&k.as_str()) && !prev.supplied(k))
        .collect();
    if let Some(Value::Object(approval)) = f.get_mut("approval") {
        approval.remove("approved_by");
        if approval.get("required").and_then(Value::as_bool) == Some(true)
            && prev.meta.status == Some(Status::Approved)
        {
            f.insert("status".into(), Value::from("pending"));
        }
    }
    if let Some(Value::Object(review)) = f.get_mut("review") {
        review.remove("last_review");
        review.remove("next_review");
    }
    f
}

pub fn run(g: &Global, p: &Printer, a: &SupersedeArgs) -> Result<Exit> {
    let w = &a.write;
    let content = add::content_text(w)?;
    if content.is_none()
        && [
            &w.title,
            &w.layer,
            &w.authority,
            &w.owner,
            &w.classification,
        ]
        .iter()
        .all(|x| x.is_none())
        && w.sources.is_empty()
        && !w.canonical_source
    {
        return Err(Error::Usage(
            "nothing to change: give the new --content (or --title, --authority, ...)".into(),
        ));
    }
    let (manifest, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let _lock = ctx_core::fs::RepoLock::acquire(&manifest.root)
        .map_err(|e| Error::io(&manifest.root, &e))?;
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let m = &repo.manifest;
    let consumer = add::writer(m, &w.who)?;
    // What the writer may read, and sees, is the library's authorized view.
    let v = super::view::open(&repo, &w.who, super::resolve::at_flag(None)?)?;
    let want = ObjectRef::parse(&a.id);
    let idx = Index::new(&repo.objects);
    let sup = v.supersession();
    let all: Vec<usize> = idx.resolve(&ObjectRef {
        id: want.id.clone(),
        version: None,
    });
    let active: Vec<usize> = all
        .iter()
        .copied()
        .filter(|i| !sup.superseded.contains(i))
        .filter(|&i| want.version.is_none() || repo.objects[i].version == want.version)
        .collect();
    // A consumer that may not read the object is told it does not exist.
    let readable = |i: usize| v.authorize(i).is_ok();
    let Some(&prev_i) = active
        .iter()
        .filter(|&&i| readable(i))
        .max_by_key(|&&i| repo.objects[i].version)
    else {
        return Err(Error::NotFound(format!(
            "no active object `{}` is visible here",
            a.id
        )));
    };
    let prev = &repo.objects[prev_i];
    if active.iter().any(|&i| !readable(i)) {
        return Err(Error::Invalid(format!(
            "`{}` has active versions you may not read; ask their owner to supersede them",
            want.id
        )));
    }
    let next = all
        .iter()
        .map(|&i| repo.objects[i].version.unwrap_or(1))
        .max()
        .unwrap_or(1)
        + 1;
    // Versions without a declared number cannot be named by a successor: annotate them.
    let mut writes = Vec::new();
    let mut replaced = Vec::new();
    let mut added = Vec::new();
    let mut targets = Vec::new();
    for &i in &active {
        let o = &repo.objects[i];
        if o.version.is_some() {
            targets.push(o.key());
            continue;
        }
        if active.len() > 1 || all.iter().any(|&j| repo.objects[j].version == Some(1)) {
            return Err(Error::Invalid(format!(
                "{} declares no `version` and cannot be named next to the other versions of `{}`; \
                 add a `version` to it first",
                o.origin.file, o.id
            )));
        }
        let old = std::fs::read(m.root.join(&o.origin.file))
            .map_err(|e| Error::io(m.root.join(&o.origin.file), &e))?;
        let text = String::from_utf8_lossy(&old);
        let annotated = emit::annotate_version(&text, o.origin.format)
            .filter(|t| matches!(write::parse_planned(m, &o.origin.file, t.as_bytes()),
                Some(parsed) if parsed.object.as_ref().is_some_and(|x| x.id == o.id && x.version == Some(1))))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{} declares no `version`; add `version: 1` to it, then supersede it",
                    o.origin.file
                ))
            })?;
        let parsed = write::parse_planned(m, &o.origin.file, annotated.as_bytes())
            .and_then(|x| x.object)
            .expect("checked above");
        targets.push(parsed.key());
        replaced.push(o.origin.file.clone());
        added.push(parsed);
        writes.push(FileWrite {
            rel: o.origin.file.clone(),
            bytes: annotated.into_bytes(),
            replaces: Some(old),
        });
    }
    let rel = match &w.file {
        Some(f) => add::file_flag(g, &m.root, f)?,
        None => sibling(&prev.origin.file, next),
    };
    let format = Format::from_path(&rel).ok_or_else(|| {
        Error::Usage(format!(
            "{rel}: the file must end in .md, .yaml, .yml or .json"
        ))
    })?;
    let mut fields = Map::new();
    fields.insert("id".into(), Value::from(want.id.as_str()));
    fields.insert("version".into(), Value::from(next));
    fields.insert("supersedes".into(), Value::from(targets.clone()));
    fields.extend(inherited(prev));
    add::overrides(&mut fields, w);
    fields.insert(
        "updated".into(),
        Value::from(super::resolve::generated_at()),
    );
    let body = content.map(Value::from).or_else(|| prev.content.clone());
    let bytes = emit::document(format, &fields, body.as_ref()).into_bytes();
    let obj = add::planned_object(p, &repo, &rel, &bytes)?;
    if write::is_promotion(m, obj.meta.authority, Some(prev.meta.authority)) && !w.promote {
        return Err(Error::Invalid(format!(
            "refusing to raise {} from `{}` to `{}`: promotion to canonical or approved is an explicit \
             governance act — pass --promote if that is what you mean (nothing was written)",
            want.id, prev.meta.authority, obj.meta.authority
        )));
    }
    if let Some(c) = &consumer {
        write::authorize_write(m, c, &obj, Some(prev))
            .map_err(|e| Error::Invalid(format!("refusing to write: {e} (nothing was written)")))?;
    }
    added.push(obj);
    let planned = write::planned_repo(&repo, &replaced, added);
    add::check_repository(p, &repo, &planned)?;
    writes.push(FileWrite {
        rel: rel.clone(),
        bytes,
        replaces: None,
    });
    let summary = format!(
        "{}@{next} supersedes {} (the previous version stays on disk)",
        want.id,
        targets.join(", ")
    );
    if w.dry_run && consumer.is_some() {
        // A consumer's dry run shows the files as that consumer may see them.
        let pv = super::view::open(&planned, &w.who, v.at())?;
        let shown = shown_writes(&pv, &planned, &writes);
        return add::finish(p, Path::new(&m.root), &shown, true, &summary);
    }
    let audited = (!w.dry_run).then(|| {
        Record::write(
            w.who.agent.as_deref(),
            &w.who.role,
            WriteKind::Supersede,
            [(
                want.id.clone(),
                planned
                    .objects
                    .iter()
                    .any(|o| o.id == want.id && o.kind() == "decision"),
            )],
        )
    });
    ctx_core::evidence::record_after(m, audited, || {
        add::finish(p, Path::new(&m.root), &writes, w.dry_run, &summary)
    })
}

/// Planned files as a consumer's view shows them: content it may not see is redacted
/// (or withheld); files whose object it sees whole are shown byte for byte.
fn shown_writes(v: &View<'_>, planned: &Repo, writes: &[FileWrite]) -> Vec<FileWrite> {
    writes
        .iter()
        .map(|w| {
            let Some(i) = planned.objects.iter().position(|o| o.origin.file == w.rel) else {
                return w.clone();
            };
            let o = &planned.objects[i];
            let content = match v.inline_content(i) {
                Ok(s) if s.redacted.is_empty() => return w.clone(),
                Ok(s) => s.content.map(|c| c.into_owned()),
                Err(why) => Some(Value::from(format!("(content not shown: {})", why.detail))),
            };
            let fields: Map<String, Value> = o
                .fields()
                .into_iter()
                .filter(|(k, _)| k != "content" && !o.supplied(k))
                .collect();
            FileWrite {
                rel: w.rel.clone(),
                bytes: emit::document(o.origin.format, &fields, content.as_ref()).into_bytes(),
                replaces: w.replaces.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_replace_a_version_suffix() {
        assert_eq!(
            sibling("context/p/enterprise.md", 2),
            "context/p/enterprise.v2.md"
        );
        assert_eq!(
            sibling("context/p/enterprise.v2.md", 3),
            "context/p/enterprise.v3.md"
        );
        assert_eq!(sibling("a.yaml", 2), "a.v2.yaml");
        assert_eq!(
            sibling("context/p/x.version.md", 2),
            "context/p/x.version.v2.md"
        );
    }
}
