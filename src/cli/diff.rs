//! `ctx diff <id>@<v1> <id>@<v2>`: two objects, field by field.
//! `ctx diff --rev A..B`: the repository at two git revisions (or one and the work tree).

use clap::Args;
use serde_json::json;

use ctx_core::changes;
use ctx_core::error::{Error, Exit, Result};
use ctx_core::git::Git;
use ctx_core::load::Repo;
use ctx_core::model::ObjectRef;
use ctx_core::resolve::ConsumerKind;

use ctx_core::view::View;

use super::args::ConsumerArgs;
use super::{Global, Printer};

/// `diff`'s formats: `github` is the pull-request comment of `--access`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    #[value(alias = "text")]
    Human,
    Json,
    Github,
}

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
    /// With --rev: what the change lets each role and agent see (objects that become
    /// visible or hidden, fields newly redacted or unredacted, ceilings), by id and field
    /// path only. With --role/--agent: that consumer only.
    #[arg(long, requires = "rev")]
    pub access: bool,
    /// Exit 1 when there are differences (like `git diff --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
    /// Output format (`github`, a pull-request comment in Markdown, needs --access).
    #[arg(long, value_enum, default_value = "human")]
    pub format: DiffFormat,
    /// Evaluate lifecycle at this RFC 3339 instant or date (default: now).
    #[arg(long, value_name = "WHEN", value_parser = super::args::parse_at)]
    pub at: Option<ctx_core::time::Instant>,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &DiffArgs) -> Result<Exit> {
    if a.format == DiffFormat::Github && !a.access {
        return Err(Error::Usage(
            "--format github is the pull-request comment of --access; use text or json".into(),
        ));
    }
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

fn objects(g: &Global, p: &Printer, a: &DiffArgs, x: &str, y: &str) -> Result<bool> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let v = View::open(&repo, &a.who.who(), g.clock.at(a.at))?;
    let missing = |t: &str| Error::NotFound(format!("no object `{t}` is visible here"));
    let (rx, ry) = (ObjectRef::parse(x), ObjectRef::parse(y));
    // `diff p p@2` compares p's other version with p@2.
    let j = v.find(&ry, None).ok_or_else(|| missing(y))?;
    let i = v.find(&rx, Some(j)).ok_or_else(|| missing(x))?;
    let j = if i == j {
        v.find(&ry, Some(i)).ok_or_else(|| missing(y))?
    } else {
        j
    };
    // Both sides as the consumer sees them: redacted values never reach the diff.
    let shown = |k: usize, t: &str| {
        v.document(k)
            .map(|d| {
                let mut f = d.fields;
                f.remove("redacted");
                f
            })
            .map_err(|w| Error::Invalid(format!("`{t}` is withheld: {}", w.detail)))
    };
    let (db, da) = (shown(i, x)?, shown(j, y)?);
    let changes = changes::object_diff(&db, &da);
    let (ob, oa) = (&repo.objects[i], &repo.objects[j]);
    let (kb, ka) = (ob.key(), oa.key());
    let text = if a.format == DiffFormat::Json {
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
    super::io_result(p.product(&text, a.output.as_deref()))?;
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
    let opts = ctx_core::load::LoadOptions::default();
    let before = ctx_core::git::revision::load_at(&git, &from, &manifest.file, &opts)?;
    let (bname, after_rev) = (
        before.short().to_string(),
        match &to {
            Some(t) => Some(ctx_core::git::revision::load_at(
                &git,
                t,
                &manifest.file,
                &opts,
            )?),
            None => None,
        },
    );
    let work_tree;
    let (after, aname) = match &after_rev {
        Some(r) => (&r.repo, r.short().to_string()),
        None => {
            work_tree = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
            (&work_tree, "work tree".to_string())
        }
    };
    let before = &before.repo;
    if a.access {
        return access(
            g,
            p,
            a,
            before,
            after,
            (&from, &bname),
            (to.as_deref(), &aname),
        );
    }
    let (who, now) = (a.who.who(), g.clock.at(a.at));
    let d = changes::repo_diff(
        &View::open(before, &who, now)?,
        &View::open(after, &who, now)?,
    );
    let label = format!(
        "{from} ({bname}) .. {} ({aname})",
        to.as_deref().unwrap_or("work tree")
    );
    let text = if a.format == DiffFormat::Json {
        ctx_core::bundle::render::json(&d.json(&from, &bname, to.as_deref(), &aname))
    } else {
        d.text(&label, &after.manifest.id)
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(!d.is_empty())
}

/// `--rev A..B --access`: every role and agent (or the one --role/--agent names).
fn access(
    g: &Global,
    p: &Printer,
    a: &DiffArgs,
    before: &Repo,
    after: &Repo,
    (from, bname): (&str, &str),
    (to, aname): (Option<&str>, &str),
) -> Result<bool> {
    let mut d = ctx_core::access::diff(before, after, g.clock.at(a.at));
    let who = a.who.who();
    if !who.is_author() {
        let wanted = |c: &ctx_core::access::ConsumerDiff| match c.kind {
            ConsumerKind::Agent => who.agent.as_deref() == Some(c.name.as_str()),
            ConsumerKind::Role => who.roles.contains(&c.name),
        };
        let missing: Vec<String> = who
            .agent
            .iter()
            .chain(who.roles.iter())
            .filter(|n| !d.consumers.iter().any(|c| &c.name == *n && wanted(c)))
            .cloned()
            .collect();
        if let Some(n) = missing.first() {
            return Err(Error::Usage(format!(
                "`{n}` is not defined at either revision"
            )));
        }
        d.consumers.retain(wanted);
    }
    let label = format!(
        "{from} ({bname}) .. {} ({aname})",
        to.unwrap_or("work tree")
    );
    let text = match a.format {
        DiffFormat::Json => ctx_core::bundle::render::json(&ctx_core::access::render::json(
            &d,
            json!({"rev": from, "commit": bname}),
            json!({"rev": to, "commit": to.map(|_| aname)}),
        )),
        DiffFormat::Github => ctx_core::access::render::github(&d, &label),
        DiffFormat::Human => ctx_core::access::render::text(&d, &label),
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(!d.is_empty())
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
