//! `ctx diff <id>@<v1> <id>@<v2>`: two objects, field by field.
//! `ctx diff --rev A..B`: the repository at two git revisions (or one and the work tree).

use std::fmt::Write as _;

use clap::Args;
use serde_json::{json, Value};

use ctx_core::changes::{self, Highlight, RepoDiff};
use ctx_core::error::{Error, Exit, Result};
use ctx_core::git::Git;
use ctx_core::load::Repo;
use ctx_core::model::{Lifecycle, ObjectRef};

use super::view::{self, ConsumerArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Two objects to compare: `id@v1 id@v2` (an id alone means its current version).
    #[arg(num_args = 0..=2, value_name = "ID@VERSION")]
    pub objects: Vec<String>,
    /// Compare the repository at two git revisions: `A..B`, `A..` (A to HEAD),
    /// or `A` alone (A to the work tree).
    #[arg(long, value_name = "A..B", conflicts_with = "objects")]
    pub rev: Option<String>,
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Exit 1 when there are differences (like `git diff --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
    /// Output format.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

pub fn run(g: &Global, p: &Printer, a: &DiffArgs) -> Result<Exit> {
    let differs =
        match (&a.rev, a.objects.as_slice()) {
            (Some(rev), []) => revisions(g, p, a, rev)?,
            (None, [x, y]) => objects(g, p, a, x, y)?,
            _ => return Err(Error::Usage(
                "give two objects (`ctx diff policies.refunds@1 policies.refunds@2`) or --rev A..B"
                    .into(),
            )),
        };
    Ok(if a.exit_code && differs {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}

/// The visible object `text` names: `id@version`, or the current version of `id`
/// (other than `not`, so `diff p p@2` compares p's other version with p@2).
fn pick(
    repo: &Repo,
    visible: &[(usize, Lifecycle)],
    text: &str,
    not: Option<usize>,
) -> Result<usize> {
    let want = ObjectRef::parse(text);
    let mut hits: Vec<(usize, Lifecycle)> = visible
        .iter()
        .copied()
        .filter(|(i, _)| {
            let o = &repo.objects[*i];
            o.id == want.id && (want.version.is_none() || o.version == want.version)
        })
        .collect();
    hits.sort_by_key(|(i, s)| (*s != Lifecycle::Superseded, repo.objects[*i].version));
    if want.version.is_none() && hits.len() > 1 {
        hits.retain(|(i, _)| Some(*i) != not);
    }
    hits.last()
        .map(|(i, _)| *i)
        .ok_or_else(|| Error::NotFound(format!("no object `{text}` is visible here")))
}

fn objects(g: &Global, p: &Printer, a: &DiffArgs, x: &str, y: &str) -> Result<bool> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let v = view::view(&repo, &a.who, chrono::Utc::now(), true)?;
    let j = pick(&repo, &v.visible, y, None)?;
    let i = pick(&repo, &v.visible, x, Some(j))?;
    let j = if i == j {
        pick(&repo, &v.visible, y, Some(i))?
    } else {
        j
    };
    let (ob, oa) = (&repo.objects[i], &repo.objects[j]);
    let changes = changes::object_diff(&ob.fields(), &oa.fields());
    let (kb, ka) = (ob.key(), oa.key());
    let text = if a.format == "json" {
        ctx_core::bundle::render::json(&json!({
            "before": {"key": kb, "file": ob.origin.file},
            "after": {"key": ka, "file": oa.origin.file},
            "changes": changes::changes_json(&changes),
        }))
    } else if changes.is_empty() {
        format!("= {kb} and {ka} do not differ in any governance field or content\n")
    } else {
        let title = if ob.id == oa.id {
            ob.id.clone()
        } else {
            format!("{kb} → {ka}")
        };
        format!(
            "~ {title}  (changed: {kb} → {ka})\n{}",
            changes::render_changes(&changes, "    ")
        )
    };
    super::io_result(p.out(&text))?;
    Ok(!changes.is_empty())
}

/// Split `A..B` into its sides; an empty side is HEAD, a missing `..` means the work tree.
fn split_range(rev: &str) -> Result<(String, Option<String>)> {
    match rev.split_once("..") {
        Some((_, b)) if b.starts_with('.') => Err(Error::Usage(format!(
            "--rev `{rev}`: symmetric ranges (A...B) are not supported; use A..B"
        ))),
        Some((a, b)) => {
            let side = |s: &str| {
                if s.is_empty() {
                    "HEAD".to_string()
                } else {
                    s.to_string()
                }
            };
            Ok((side(a), Some(side(b))))
        }
        None if rev.is_empty() => Err(Error::Usage("--rev needs a revision".into())),
        None => Ok((rev.to_string(), None)),
    }
}

fn revisions(g: &Global, p: &Printer, a: &DiffArgs, rev: &str) -> Result<bool> {
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let git = Git::discover(&manifest.root).ok_or_else(|| {
        Error::Usage(format!(
            "--rev needs a git work tree, and {} is not inside one (or git is not installed)",
            manifest.root.display()
        ))
    })?;
    let (from, to) = split_range(rev)?;
    let tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), &e))?;
    let load_rev = |r: &str, n: usize| -> Result<(Repo, String)> {
        let commit = git
            .resolve_rev(r)
            .map_err(|_| Error::NotFound(format!("`{r}` is not a commit in this repository")))?;
        let dest = tmp.path().join(format!("rev{n}"));
        let root = git
            .materialize_rev(&commit, &dest, &tmp.path().join(format!("index{n}")))
            .map_err(|e| Error::Invalid(e.to_string()))?;
        if !root.join(&manifest.file).is_file() {
            return Err(Error::NotFound(format!(
                "{} does not exist at {r}",
                manifest.file
            )));
        }
        // A throw-away checkout: nothing is cached for it.
        let g2 = Global {
            dir: Some(root),
            cache: false,
            ..g.clone()
        };
        let repo = super::validate::load_repo(&g2, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
        Ok((repo, commit[..commit.len().min(8)].to_string()))
    };
    let (before, bname) = load_rev(&from, 0)?;
    let (after, aname) = match &to {
        Some(t) => load_rev(t, 1)?,
        None => (
            super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?,
            "work tree".to_string(),
        ),
    };
    let now = chrono::Utc::now();
    let vb = view::view(&before, &a.who, now, true)?;
    let va = view::view(&after, &a.who, now, true)?;
    let set = |v: &view::View, n: usize| {
        let mut keep = vec![false; n];
        for (i, _) in &v.visible {
            keep[*i] = true;
        }
        keep
    };
    let (kb, ka) = (
        set(&vb, before.objects.len()),
        set(&va, after.objects.len()),
    );
    let d = changes::repo_diff(&before, &after, &|i| kb[i], &|i| ka[i]);
    let label = format!(
        "{from} ({bname}) .. {} ({aname})",
        to.as_deref().unwrap_or("work tree")
    );
    let text = if a.format == "json" {
        ctx_core::bundle::render::json(&rev_json(&d, &from, &bname, to.as_deref(), &aname))
    } else {
        rev_text(&d, &label, &after.manifest.id)
    };
    super::io_result(p.out(&text))?;
    Ok(!d.is_empty())
}

fn highlight_text(h: &Highlight) -> String {
    match h {
        Highlight::Promotion { key, from, to } => {
            format!("⚠ authority promoted: {key}  {from} → {to}")
        }
        Highlight::Classification {
            key,
            from,
            to,
            lowered,
        } => format!(
            "⚠ classification {}: {key}  {from} → {to}",
            if *lowered { "lowered" } else { "raised" }
        ),
    }
}

fn rev_text(d: &RepoDiff, label: &str, ns: &str) -> String {
    let mut out = format!("Context changes in {ns}: {label}\n\n");
    if !d.highlights.is_empty() {
        out.push_str("Governance:\n");
        for h in &d.highlights {
            let _ = writeln!(out, "  {}", highlight_text(h));
        }
        out.push('\n');
    }
    for (key, file) in &d.added {
        let _ = writeln!(out, "+ {key}  (added)  {file}");
    }
    for (key, file) in &d.removed {
        let _ = writeln!(out, "- {key}  (removed)  {file}");
    }
    for (key, changes) in &d.changed {
        let _ = writeln!(out, "~ {key}  (changed)");
        out.push_str(&changes::render_changes(changes, "    "));
    }
    let promotions = d
        .highlights
        .iter()
        .filter(|h| matches!(h, Highlight::Promotion { .. }))
        .count();
    let _ = writeln!(
        out,
        "\n{} added, {} removed, {} changed; {} authority promotion(s), {} classification change(s)",
        d.added.len(),
        d.removed.len(),
        d.changed.len(),
        promotions,
        d.highlights.len() - promotions
    );
    out
}

fn rev_json(d: &RepoDiff, from: &str, bname: &str, to: Option<&str>, aname: &str) -> Value {
    let highlights: Vec<Value> = d
        .highlights
        .iter()
        .map(|h| match h {
            Highlight::Promotion { key, from, to } => {
                json!({"kind": "authority-promotion", "id": key, "from": from, "to": to})
            }
            Highlight::Classification {
                key,
                from,
                to,
                lowered,
            } => json!({"kind": "classification-change", "id": key, "from": from, "to": to, "lowered": lowered}),
        })
        .collect();
    json!({
        "from": {"rev": from, "commit": bname},
        "to": {"rev": to, "commit": if to.is_some() { Value::from(aname) } else { Value::Null }},
        "added": d.added.iter().map(|(k, f)| json!({"id": k, "file": f})).collect::<Vec<_>>(),
        "removed": d.removed.iter().map(|(k, f)| json!({"id": k, "file": f})).collect::<Vec<_>>(),
        "changed": d.changed.iter().map(|(k, c)| json!({"id": k, "changes": changes::changes_json(c)})).collect::<Vec<_>>(),
        "highlights": highlights,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(split_range("a..b").unwrap(), ("a".into(), Some("b".into())));
        assert_eq!(
            split_range("a..").unwrap(),
            ("a".into(), Some("HEAD".into()))
        );
        assert_eq!(split_range("v1").unwrap(), ("v1".into(), None));
        assert!(split_range("a...b").is_err());
        assert!(split_range("").is_err());
    }
}
