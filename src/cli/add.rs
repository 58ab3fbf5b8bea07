//! `ctx add <id> --type T`: a new object, checked (authorization, schema,
//! promotion, repository validity) before anything touches disk.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Map, Value};

use ctx_core::diag::render::{self, HumanStyle};
use ctx_core::diag::{Diagnostic, Severity};
use ctx_core::error::{Error, Exit, Result};
use ctx_core::evidence::{Record, WriteKind};
use ctx_core::fs::{confine, RepoLock};
use ctx_core::load::Repo;
use ctx_core::manifest::Manifest;
use ctx_core::object::{ContextObject, Format};
use ctx_core::resolve::Consumer;
use ctx_core::validate::{self, ValidateOptions};
use ctx_core::write::{self, emit, FileWrite};

use super::view::ConsumerArgs;
use super::{Global, Printer};

/// Flags shared by `add` and `supersede`.
#[derive(Debug, Args, Clone, Default)]
pub struct WriteArgs {
    #[arg(long)]
    pub title: Option<String>,
    /// The content (Markdown text); `-` reads it from stdin.
    #[arg(long)]
    pub content: Option<String>,
    #[arg(long)]
    pub layer: Option<String>,
    /// Authority; `canonical` and `approved` also need --promote.
    #[arg(long)]
    pub authority: Option<String>,
    #[arg(long)]
    pub owner: Option<String>,
    #[arg(long)]
    pub classification: Option<String>,
    /// Where the content came from (repeatable): recorded as `sources: [{uri: ...}]`.
    #[arg(long = "source", value_name = "URI")]
    pub sources: Vec<String>,
    /// Declare the object its own origin (`canonical_source: true`).
    #[arg(long)]
    pub canonical_source: bool,
    /// Where to write it (relative to the current folder; must be inside a collection).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Permit canonical or approved authority: promotion is an explicit governance act.
    #[arg(long)]
    pub promote: bool,
    /// Show what would be written, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write as this agent or role (it needs a write grant); default: the repository author.
    #[command(flatten)]
    pub who: ConsumerArgs,
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

/// Is `id` a well-formed object id (dotted segments of lowercase letters, digits, `-`, `_`)?
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.split('.').all(|s| {
            let mut c = s.chars();
            c.next()
                .is_some_and(|f| f.is_ascii_lowercase() || f.is_ascii_digit())
                && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '-' || x == '_')
        })
}

/// The content flag's text (`-` reads stdin).
pub fn content_text(a: &WriteArgs) -> Result<Option<String>> {
    match a.content.as_deref() {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| Error::io("<stdin>", &e))?;
            Ok(Some(s))
        }
        other => Ok(other.map(str::to_string)),
    }
}

/// Apply the flag overrides to `fields`.
pub fn overrides(fields: &mut Map<String, Value>, a: &WriteArgs) {
    for (k, v) in [
        ("title", &a.title),
        ("layer", &a.layer),
        ("authority", &a.authority),
        ("owner", &a.owner),
        ("classification", &a.classification),
    ] {
        if let Some(v) = v {
            fields.insert(k.into(), Value::from(v.as_str()));
        }
    }
    if !a.sources.is_empty() {
        let list: Vec<Value> = a
            .sources
            .iter()
            .map(|u| serde_json::json!({ "uri": u }))
            .collect();
        fields.insert("sources".into(), Value::Array(list));
    }
    if a.canonical_source {
        fields.insert("canonical_source".into(), Value::Bool(true));
    }
}

/// `--file` relative to the manifest folder.
pub fn file_flag(g: &Global, root: &Path, f: &Path) -> Result<String> {
    let rel = confine::rel_in_root(root, &g.cwd, f).ok_or_else(|| {
        Error::Usage(format!(
            "--file {} is outside the repository folder {}",
            f.display(),
            root.display()
        ))
    })?;
    if !confine::is_plain(&rel) {
        return Err(Error::Usage(format!(
            "--file {}: use a plain path inside the repository (no `..`, no hidden folders)",
            f.display()
        )));
    }
    Ok(rel.into())
}

/// The consumer writing, if `--agent`/`--role` was given. Writes pass the policy
/// gate like reads: no write while role or agent definitions have errors.
pub fn writer(m: &Manifest, who: &ConsumerArgs) -> Result<Option<Consumer>> {
    ctx_core::manifest::roles::require_sound(m)?;
    if who.agent.is_none() && who.role.is_empty() {
        return Ok(None);
    }
    Consumer::from_flags(m, who.agent.as_deref(), &who.role).map(Some)
}

/// Parse the planned file as the loader would, refusing on schema errors.
pub fn planned_object(p: &Printer, repo: &Repo, rel: &str, bytes: &[u8]) -> Result<ContextObject> {
    let m = &repo.manifest;
    let parsed = write::parse_planned(m, rel, bytes).ok_or_else(|| {
        let cols: Vec<String> = m
            .collections
            .iter()
            .map(|c| format!("{} ({})", c.name, c.source))
            .collect();
        Error::Invalid(format!(
            "no collection loads {rel}, so the object would never be read; choose a path inside one of: {}",
            if cols.is_empty() { "(no collections)".into() } else { cols.join(", ") }
        ))
    })?;
    let errors: Vec<Diagnostic> = parsed
        .diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .cloned()
        .collect();
    if !errors.is_empty() {
        refuse_with(p, repo, &errors)?;
        return Err(Error::Invalid(format!(
            "refusing to write {rel}: it would not pass validation (nothing was written)"
        )));
    }
    parsed
        .object
        .ok_or_else(|| Error::Invalid(format!("{rel} would not hold an object")))
}

/// Show findings that stop a write (on stderr: the product is what would be written).
pub fn refuse_with(p: &Printer, repo: &Repo, diags: &[Diagnostic]) -> Result<()> {
    let text = render::human(
        diags,
        &repo.manifest.root,
        HumanStyle {
            color: p.color_err,
            width: p.width,
        },
    );
    super::io_result(p.err(&text))
}

/// Refuse if the planned repository has errors the current one does not.
pub fn check_repository(p: &Printer, repo: &Repo, planned: &Repo) -> Result<()> {
    let before = validate::validate(
        repo,
        ValidateOptions {
            strict: false,
            at: None,
        },
    );
    let after = validate::validate(
        planned,
        ValidateOptions {
            strict: false,
            at: None,
        },
    );
    let new = write::new_errors(&before, &after);
    if new.is_empty() {
        return Ok(());
    }
    refuse_with(p, planned, &new)?;
    if new
        .iter()
        .any(|d| d.code == ctx_core::diag::Code::MissingProvenance)
    {
        let _ = p.err("hint: pass --source <uri> (where it came from) or --canonical-source (it is the origin)\n");
    }
    Err(Error::Invalid(format!(
        "refusing to write: the repository would gain {} error(s) (nothing was written)",
        new.len()
    )))
}

/// Print the plan (dry run) or apply it.
pub fn finish(
    p: &Printer,
    root: &Path,
    writes: &[FileWrite],
    dry_run: bool,
    summary: &str,
) -> Result<Exit> {
    if dry_run {
        let mut out = String::new();
        for w in writes {
            let verb = if w.replaces.is_some() {
                "would update"
            } else {
                "would create"
            };
            out.push_str(&format!("{verb} {}:\n", w.rel));
            out.push_str(&String::from_utf8_lossy(&w.bytes));
            out.push('\n');
        }
        out.push_str(&format!("dry run: {summary}; nothing was written\n"));
        super::io_result(p.out(&out))?;
        return Ok(Exit::Ok);
    }
    if let Some(ms) = std::env::var("CTX_TEST_WRITE_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        // Test hook: widen the window between reading and writing, to prove the lock.
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    write::apply(root, writes).map_err(Error::Invalid)?;
    let mut out = String::new();
    for w in writes {
        let verb = if w.replaces.is_some() {
            "updated"
        } else {
            "created"
        };
        out.push_str(&format!("{verb} {}\n", w.rel));
    }
    out.push_str(&format!("{summary}\n"));
    super::io_result(p.out(&out))?;
    Ok(Exit::Ok)
}

pub fn run(g: &Global, p: &Printer, a: &AddArgs) -> Result<Exit> {
    if !valid_id(&a.id) {
        return Err(Error::Usage(format!(
            "`{}` is not a valid id: use dotted lowercase segments, e.g. `policies.returns`",
            a.id
        )));
    }
    let (manifest, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let _lock = RepoLock::acquire(&manifest.root).map_err(|e| Error::io(&manifest.root, &e))?;
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let m = &repo.manifest;
    let consumer = writer(m, &a.write.who)?;
    if let Some(o) = repo.objects.iter().find(|o| o.id == a.id) {
        return Err(Error::Invalid(format!(
            "`{}` already exists ({}); durable context is superseded, never overwritten: run `ctx supersede {}`",
            a.id, o.origin.file, a.id
        )));
    }
    let rel = match &a.write.file {
        Some(f) => file_flag(g, &m.root, f)?,
        None => write::default_path(m, &a.id).ok_or_else(|| {
            Error::Usage(format!(
                "no collection matches the id `{}`; pass --file <path inside a collection>",
                a.id
            ))
        })?,
    };
    let format = Format::from_path(&rel).ok_or_else(|| {
        Error::Usage(format!(
            "{rel}: the file must end in .md, .yaml, .yml or .json"
        ))
    })?;
    let mut fields = Map::new();
    fields.insert("id".into(), Value::from(a.id.as_str()));
    fields.insert("type".into(), Value::from(a.kind.as_str()));
    overrides(&mut fields, &a.write);
    fields.insert(
        "updated".into(),
        Value::from(super::resolve::generated_at()),
    );
    let content = content_text(&a.write)?.map(Value::from);
    let bytes = emit::document(format, &fields, content.as_ref()).into_bytes();
    let obj = planned_object(p, &repo, &rel, &bytes)?;
    if write::is_promotion(m, obj.meta.authority, None) && !a.write.promote {
        return Err(Error::Invalid(format!(
            "refusing to write {} with authority `{}`: promotion to canonical or approved is an explicit \
             governance act — pass --promote if that is what you mean (nothing was written)",
            a.id, obj.meta.authority
        )));
    }
    if let Some(c) = &consumer {
        write::authorize_write(m, c, &obj, None)
            .map_err(|e| Error::Invalid(format!("refusing to write: {e} (nothing was written)")))?;
    }
    let planned = write::planned_repo(&repo, &[], vec![obj]);
    check_repository(p, &repo, &planned)?;
    let writes = [FileWrite {
        rel: rel.clone(),
        bytes,
        replaces: None,
    }];
    let audited = (!a.write.dry_run).then(|| {
        Record::write(
            a.write.who.agent.as_deref(),
            &a.write.who.role,
            WriteKind::Write,
            [(a.id.clone(), a.kind == "decision")],
        )
    });
    ctx_core::evidence::record_after(m, audited, || {
        finish(
            p,
            &m.root,
            &writes,
            a.write.dry_run,
            &format!("added {} in {rel}", a.id),
        )
    })
}
