//! `ctx add <id> --type T`: a new object. The library plans it (every check runs
//! on the planned bytes) and applies it under the repository lock; this file only
//! turns flags into a request and prints the plan or the result.

use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::load::LoadOptions;
use ctx_core::write::input;
use ctx_core::write::plan::{self, Fields, Plan, Request, Session};

use super::args::ConsumerArgs;
use super::{Global, Printer};

/// Flags shared by `add` and `supersede`.
#[derive(Debug, Args, Clone, Default)]
pub struct WriteArgs {
    /// The object's title.
    #[arg(long)]
    pub title: Option<String>,
    /// The content (Markdown text); `-` reads it from stdin.
    #[arg(long, conflicts_with_all = ["data", "content_file"])]
    pub content: Option<String>,
    /// Structured content from a JSON or YAML file inside the repository (`-`: stdin);
    /// written into a .json file (or the --file you name). Only structured content can be redacted.
    #[arg(long, value_name = "FILE", conflicts_with = "content_file")]
    pub data: Option<PathBuf>,
    /// Text content from a file inside the repository.
    #[arg(long, value_name = "PATH")]
    pub content_file: Option<PathBuf>,
    /// Its layer (e.g. L4), when the repository uses layers.
    #[arg(long)]
    pub layer: Option<String>,
    /// Authority; `canonical` and `approved` also need --promote.
    #[arg(long)]
    pub authority: Option<String>,
    /// Who owns it (a team or person; `ctx doctor` reports objects without one).
    #[arg(long)]
    pub owner: Option<String>,
    /// Its classification: public, internal (the default), confidential or restricted.
    #[arg(long)]
    pub classification: Option<String>,
    /// Where the content came from (repeatable): recorded as `sources: [{uri: ...}]`.
    #[arg(long = "source", value_name = "URI")]
    pub sources: Vec<String>,
    /// Declare the object its own origin (`canonical_source: true`).
    #[arg(long)]
    pub canonical_source: bool,
    /// Tags (comma-separated, or repeat the flag).
    #[arg(
        long = "tags",
        alias = "tag",
        value_name = "TAG",
        value_delimiter = ','
    )]
    pub tags: Vec<String>,
    /// Any other field, as KEY=VALUE (repeatable); VALUE is JSON when it parses
    /// as JSON (`review={"interval":"90d"}`), else text (`status=draft`).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = plan::parse_assignment)]
    pub set: Vec<(String, serde_json::Value)>,
    /// Where to write it (relative to the current folder; must be inside a collection).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Permit canonical or approved authority: promotion is an explicit governance act.
    #[arg(long)]
    pub promote: bool,
    /// Show what would be written (as the writer may see it), and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write as this agent or role (it needs a write grant); default: the repository author.
    #[command(flatten)]
    pub who: ConsumerArgs,
}

impl WriteArgs {
    /// The library's request (`--content -` reads stdin here, at the edge).
    pub fn request(&self, g: &Global) -> Result<Request> {
        let stdin = || {
            let mut b = Vec::new();
            std::io::stdin()
                .read_to_end(&mut b)
                .map_err(|e| Error::io("<stdin>", &e))
                .map(|_| b)
        };
        let content = match (&self.content, &self.data, &self.content_file) {
            (Some(c), _, _) if c == "-" => Some(input::text("<stdin>", stdin()?)?),
            (Some(c), _, _) => Some(serde_json::Value::from(c.as_str())),
            (_, Some(d), _) if d.as_os_str() == "-" => {
                Some(input::parse_data("<stdin>", &stdin()?)?)
            }
            (_, Some(d), _) => {
                let bytes = input::read_in_repo(&self.root(g)?, &g.cwd, d, "--data")?;
                Some(input::parse_data(&d.display().to_string(), &bytes)?)
            }
            (_, _, Some(f)) => {
                let bytes = input::read_in_repo(&self.root(g)?, &g.cwd, f, "--content-file")?;
                Some(input::text(&f.display().to_string(), bytes)?)
            }
            _ => None,
        };
        Ok(Request {
            who: self.who.who(),
            fields: Fields {
                title: self.title.clone(),
                content,
                layer: self.layer.clone(),
                authority: self.authority.clone(),
                owner: self.owner.clone(),
                classification: self.classification.clone(),
                sources: self.sources.clone(),
                canonical_source: self.canonical_source,
                tags: self.tags.clone(),
                set: self.set.clone(),
            },
            file: self.file.clone(),
            cwd: g.cwd.clone(),
            promote: self.promote,
            ..Request::default()
        })
    }

    /// The repository folder content files must be inside.
    fn root(&self, g: &Global) -> Result<PathBuf> {
        let (m, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
        Ok(m.root)
    }
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The new object's id (dotted lowercase, e.g. `policies.returns`).
    pub id: String,
    /// The object type (e.g. policy, procedure, decision).
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: String,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// Print the plan (dry run, through the writer's view) or apply it and report.
pub fn finish(g: &Global, p: &Printer, s: &Session, plan: &Plan, dry_run: bool) -> Result<Exit> {
    let mut out = String::new();
    if dry_run {
        for w in plan.shown(g.clock.now())? {
            let verb = if w.replaces.is_some() {
                "would update"
            } else {
                "would create"
            };
            out.push_str(&format!("{verb} {}:\n", w.rel));
            out.push_str(&String::from_utf8_lossy(&w.bytes));
            out.push('\n');
        }
        out.push_str(&format!("dry run: {}; nothing was written\n", plan.summary));
    } else {
        s.apply(plan)?;
        for w in &plan.writes {
            let verb = if w.replaces.is_some() {
                "updated"
            } else {
                "created"
            };
            out.push_str(&format!("{verb} {}\n", w.rel));
        }
        out.push_str(&format!("{}\n", plan.summary));
    }
    super::io_result(p.out(&out))?;
    Ok(Exit::Ok)
}

pub fn run(g: &Global, p: &Printer, a: &AddArgs) -> Result<Exit> {
    let req = a.write.request(g)?;
    let s = Session::open(g.dir.as_deref(), &g.cwd, &LoadOptions::default())?;
    let plan = plan::add(&s.repo, &a.id, &a.kind, &req, &g.clock)?;
    finish(g, p, &s, &plan, a.write.dry_run)
}
