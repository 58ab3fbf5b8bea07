//! `ctx diff <id>@<v1> <id>@<v2>`: two objects, field by field.
//! `ctx diff --rev A..B`: the repository at two git revisions (or one and the work tree).

use clap::Args;
use serde_json::json;

use ctx_core::access::render as access_render;
use ctx_core::changes;
use ctx_core::error::{Error, Exit, Result};
use ctx_core::git::revision;
use ctx_core::git::Git;

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
    let c = changes::compare_objects(&v, x, y)?;
    let text = if a.format == DiffFormat::Json {
        ctx_core::bundle::render::json(&c.json(&repo))
    } else {
        c.text(&repo)
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(!c.changes.is_empty())
}

fn revisions(g: &Global, p: &Printer, a: &DiffArgs, rev: &str) -> Result<bool> {
    let (manifest, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let git = Git::discover(&manifest.root).ok_or_else(|| {
        Error::Usage(format!(
            "--rev needs a git work tree, and {} is not inside one (or git is not installed)",
            manifest.root.display()
        ))
    })?;
    let opts = ctx_core::load::LoadOptions::default();
    let range = revision::load_range(&git, rev, &manifest.file, &opts)?;
    let work_tree;
    let after = match &range.after {
        Some(r) => &r.repo,
        None => {
            work_tree = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
            &work_tree
        }
    };
    let (before, now, label) = (&range.before.repo, g.clock.at(a.at), range.label());
    let (bname, aname) = (
        range.before.short(),
        range.after.as_ref().map_or("work tree", |r| r.short()),
    );
    if a.access {
        let mut d = ctx_core::access::diff(before, after, now);
        d.retain_named(&a.who.who())?;
        let to = range.to.as_deref();
        let text = match a.format {
            DiffFormat::Json => ctx_core::bundle::render::json(&access_render::json(
                &d,
                json!({"rev": range.from, "commit": bname}),
                json!({"rev": to, "commit": to.map(|_| aname)}),
            )),
            DiffFormat::Github => access_render::github(&d, &label),
            DiffFormat::Human => access_render::text(&d, &label),
        };
        super::io_result(p.product(&text, a.output.as_deref()))?;
        return Ok(!d.is_empty());
    }
    let who = a.who.who();
    let d = changes::repo_diff(
        &View::open(before, &who, now)?,
        &View::open(after, &who, now)?,
    );
    let text = if a.format == DiffFormat::Json {
        let to = range.to.as_deref();
        ctx_core::bundle::render::json(&d.json(&range.from, bname, to, aname))
    } else {
        d.text(&label, &after.manifest.id)
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(!d.is_empty())
}
