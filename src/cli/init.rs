//! `ctx init`: a new repository that passes `validate --strict`, with two roles
//! of different scope so the permission model is visible from the start.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::fs::{Existing, Mode};

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Folder to create the repository in (default: the current folder).
    pub dir: Option<PathBuf>,
    /// Namespace id (lowercase, dashes), default derived from the folder name.
    #[arg(long)]
    pub id: Option<String>,
    /// Human-readable name.
    #[arg(long)]
    pub name: Option<String>,
    /// Take every default without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Re-initialise an existing repository, replacing the template files.
    #[arg(long)]
    pub force: bool,
    /// Also make the folder a git work tree (`git init`, unless it is inside one) and
    /// keep ctx's per-machine state out of git with a `.gitignore`.
    #[arg(long)]
    pub git: bool,
    /// `default` (a team repository with two roles) or `personal` (an encrypted personal
    /// vault of seed 004's ten categories; see docs/personal.md).
    #[arg(long, default_value = "default", value_parser = ["default", "personal"])]
    pub template: String,
    #[command(flatten)]
    pub password: super::personal::PasswordArgs,
    /// With --template personal: also encrypt every category to this age public key of
    /// your own (recovery when the secret key is lost). Repeatable.
    #[arg(long = "recovery-recipient", value_name = "AGE1...")]
    pub recovery: Vec<String>,
    /// Also write a CI workflow that checks the repository with a released ctx binary.
    #[arg(long, value_enum, value_name = "SYSTEM")]
    pub ci: Option<CiSystem>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CiSystem {
    /// GitHub Actions: .github/workflows/context.yml using ctx's action.yml.
    Github,
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "context".into()
    } else {
        out
    }
}

fn valid_namespace(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(x) if x.is_ascii_lowercase() || x.is_ascii_digit())
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '-')
}

fn ask(question: &str, default: &str) -> std::io::Result<String> {
    let mut err = std::io::stderr().lock();
    write!(err, "{question} [{default}]: ")?;
    err.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let line = line.trim();
    Ok(if line.is_empty() {
        default.to_string()
    } else {
        line.to_string()
    })
}

/// The files of a new repository, as (relative path, contents).
pub fn template(id: &str, name: &str, today: &str) -> Vec<(&'static str, String)> {
    let manifest = format!(
        r#"# OpenContext repository. Check it with `ctx validate --strict`;
# see what a role may read with `ctx resolve --role support --task "refund" --explain`.
opencontext: "1.0"
id: {id}
name: {name}

context:
  mission: ./context/mission.md

collections:
  policies: ./context/policies/**
  procedures:
    source: ./context/procedures/**
    type: procedure
    layer: L4

roles:
  everyone:
    description: What every person and agent may read.
    include: [mission]
  support:
    description: Front-line support; internal policies stay out of scope.
    inherits: [everyone]
    include: [policies.*, procedures.*]
    exclude: [policies.internal.*]
  leads:
    description: Team leads; everything up to confidential.
    inherits: [everyone]
    include: ["*"]
    max_classification: confidential

agents:
  support-agent:
    roles: [support]

freshness:
  default_ttl: 365d

provenance:
  required: true

# `ctx doctor --strict` (what `ctx init --ci github` runs in CI) fails on warnings too,
# as `ctx validate --strict` does: the lints for mistakes that silently change what a
# consumer sees (a pattern that matches nothing, a redaction that hides nothing) are warnings.
health:
  fail_on: warning
"#
    );
    let obj = |id: &str,
               ty: &str,
               layer: &str,
               title: &str,
               owner: &str,
               extra: &str,
               body: &str| {
        format!(
            "---\nid: {id}\ntype: {ty}\nlayer: {layer}\ntitle: {title}\nauthority: canonical\nowner: {owner}\nclassification: internal\nupdated: {today}T00:00:00Z\ncanonical_source: true\n{extra}---\n\n{body}\n"
        )
    };
    vec![
        ("opencontext.yaml", manifest),
        (
            "context/mission.md",
            obj("mission", "mission", "L0", "Why we exist", "founders", "", &format!("{name} exists to serve its customers well. Replace this with your mission.")),
        ),
        (
            "context/policies/refunds.md",
            obj("policies.refunds", "policy", "L3", "Refund policy", "support", "tags: [refunds, billing]\n", "Customers may request a refund within 30 days of purchase."),
        ),
        (
            "context/policies/internal/escalation.md",
            obj("policies.internal.escalation", "policy", "L3", "Escalation thresholds", "leads", "", "Refunds above 1,000 need a lead's approval.")
                .replacen("classification: internal\n", "classification: confidential\n", 1),
        ),
        (
            "context/procedures/refund.md",
            obj("procedures.refund", "procedure", "L4", "How to process a refund", "support", "references: [policies.refunds]\ntags: [refunds]\n", "1. Check the purchase date.\n2. Apply the refund policy.\n3. Record the outcome on the ticket."),
        ),
    ]
}

pub fn run(g: &Global, p: &Printer, args: &InitArgs) -> Result<Exit> {
    let dir = match &args.dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => g.cwd.join(d),
        None => g.cwd.clone(),
    };
    // An existing repository is never re-initialised by accident; `--ci`/`--git`
    // alone add their files to it and leave the repository as it is.
    let existing = ["opencontext.yaml", "opencontext.yml", "opencontext.json"]
        .into_iter()
        .find(|m| dir.join(m).is_file())
        .filter(|_| !args.force);
    if let Some(m) = existing {
        // A personal vault has its own, stricter rule (a new or empty folder only).
        if args.ci.is_none() && !args.git && args.template != "personal" {
            return Err(Error::Invalid(format!(
                "{} already holds an OpenContext repository ({m}); nothing was changed. \
                 `ctx init --force` re-initialises it, replacing the template files",
                display(&dir, &g.cwd)
            )));
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, &e))?;
    let folder_name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "context".into());
    let interactive = !args.yes && std::io::stdin().is_terminal();
    let default_id = args.id.clone().unwrap_or_else(|| slug(&folder_name));
    let id = if interactive && args.id.is_none() {
        ask("Namespace id", &default_id).map_err(|e| Error::io("stdin", &e))?
    } else {
        default_id
    };
    if !valid_namespace(&id) {
        return Err(Error::Usage(format!("`{id}` is not a valid namespace id: use lowercase letters, digits and dashes, e.g. `acme`")));
    }
    let default_name = args.name.clone().unwrap_or_else(|| folder_name.clone());
    let name = if interactive && args.name.is_none() {
        ask("Name", &default_name).map_err(|e| Error::io("stdin", &e))?
    } else {
        default_name
    };
    let today = g.clock.now().format("%Y-%m-%d").to_string();
    let name_yaml = serde_json::to_string(&name).expect("string");
    if args.template == "personal" {
        return personal(g, p, args, &dir, &id, &name_yaml);
    }
    let mut report = String::new();
    if let Some(m) = existing {
        report.push_str(&format!(
            "  kept     {m} (an existing repository; --force re-initialises it)\n"
        ));
    }
    let files = if existing.is_some() {
        Vec::new()
    } else {
        template(&id, &name_yaml, &today)
    };
    let mut written: Vec<&str> = Vec::new();
    for (rel, text) in files {
        let path = dir.join(rel);
        let exists = path.exists();
        if exists && !args.force {
            report.push_str(&format!("  kept     {rel} (exists; --force replaces it)\n"));
            continue;
        }
        written.push(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
        }
        ctx_core::fs::write_atomic(&path, text.as_bytes(), Mode::Preserve, Existing::Replace)
            .map_err(|e| Error::io(&path, &e))?;
        report.push_str(&format!(
            "  {}  {rel}\n",
            if exists { "replaced" } else { "created " }
        ));
    }
    if !written.is_empty() {
        report.push_str(&sign_starter_objects(g, &dir, &written)?);
    }
    if let Some(CiSystem::Github) = args.ci {
        let (path, text) = ctx_core::ci::github_workflow_file(&dir, env!("CARGO_PKG_VERSION"));
        let rel = display(&path, &g.cwd);
        if path.exists() && !args.force {
            report.push_str(&format!("  kept     {rel} (exists; --force replaces it)\n"));
        } else {
            std::fs::create_dir_all(path.parent().expect("a workflow folder"))
                .map_err(|e| Error::io(&path, &e))?;
            let existed = path.exists();
            ctx_core::fs::write_atomic(&path, text.as_bytes(), Mode::Preserve, Existing::Replace)
                .map_err(|e| Error::io(&path, &e))?;
            let verb = if existed { "replaced" } else { "created " };
            report.push_str(&format!("  {verb}  {rel}\n"));
        }
    }
    if args.git {
        report.push_str(&git_setup(&dir, &g.cwd)?);
    }
    let shown = display(&dir, &g.cwd);
    report.push_str(&format!(
        "Initialised OpenContext repository `{id}` in {shown}\nNext: ctx -C {shown} validate --strict\n      ctx -C {shown} resolve --role support --task \"refund\" --explain\n"
    ));
    super::io_result(p.out(&report))?;
    Ok(Exit::Ok)
}

/// Sign off the canonical starter objects init just wrote: the person creating the
/// repository owns them, and a new repository passes `validate --strict` as created.
fn sign_starter_objects(g: &Global, dir: &Path, written: &[&str]) -> Result<String> {
    let repo = ctx_core::load::open(Some(dir), &g.cwd, &ctx_core::load::LoadOptions::default())?;
    let by = ctx_core::write::signoff::signer(None, &[]);
    let planned =
        ctx_core::write::promote::missing(&repo, Some(written), &by, &g.clock.stamp(), "init")?;
    for p in &planned {
        ctx_core::write::signoff::write(&repo.manifest.root, p)?;
    }
    Ok(match planned.len() {
        0 => String::new(),
        n => format!(
            "  created   {}/ (sign-offs of the {n} canonical starter objects; commit them)\n",
            ctx_core::write::signoff::DIR
        ),
    })
}

/// What `.gitignore` keeps out of git. Everything else ctx writes under `.ctx/`
/// belongs in git: `redaction.key` (every clone must hash alike), `receipts/` and
/// `bundles/` (evidence others verify), `signoffs/` (who made an object canonical),
/// and the audit log with its head.
const GITIGNORE: &[&str] = &[
    "# ctx: per-machine state that must not be committed",
    "/.ctx/provider-state/",
];

/// `git init` (unless already in a work tree) and the `.gitignore` lines ctx needs,
/// appended to an existing `.gitignore` without touching what is there.
fn git_setup(dir: &Path, cwd: &Path) -> Result<String> {
    let mut report = String::new();
    if ctx_core::git::Git::discover(dir).is_none() {
        let out = ctx_core::git::command(dir, ctx_core::git::Scope::Isolated)
            .args(["init", "-q"])
            .output()
            .map_err(|e| Error::Usage(format!("--git needs git installed: {e}")))?;
        if !out.status.success() {
            return Err(Error::Invalid(format!(
                "git init failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        report.push_str("  created   a git work tree (git init)\n");
    }
    let path = dir.join(".gitignore");
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(&path, &e)),
    };
    let missing: Vec<&str> = GITIGNORE
        .iter()
        .filter(|l| !old.lines().any(|x| x.trim() == **l))
        .copied()
        .collect();
    if !missing.is_empty() {
        let mut text = old.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&(missing.join("\n") + "\n"));
        ctx_core::fs::write_atomic(&path, text.as_bytes(), Mode::Preserve, Existing::Replace)
            .map_err(|e| Error::io(&path, &e))?;
        let verb = if old.is_empty() {
            "created "
        } else {
            "updated "
        };
        report.push_str(&format!("  {verb}  {}\n", display(&path, cwd)));
    }
    Ok(report)
}

fn display(dir: &Path, cwd: &Path) -> String {
    match dir.strip_prefix(cwd) {
        Ok(r) if r.as_os_str().is_empty() => ".".into(),
        Ok(r) => r.display().to_string(),
        Err(_) => dir.display().to_string(),
    }
}

/// `--template personal`: the vault (manifest, sealed category descriptors, secret key).
fn personal(
    g: &Global,
    p: &Printer,
    args: &InitArgs,
    dir: &Path,
    id: &str,
    name_yaml: &str,
) -> Result<Exit> {
    if args.force {
        return Err(Error::Usage("--force does not apply to --template personal: a vault is created in a new or empty folder".into()));
    }
    let password = args.password.read(true)?;
    let c = ctx_core::personal::template::create(&ctx_core::personal::template::Options {
        dir,
        id,
        name_yaml,
        password: password.as_bytes(),
        recovery: args.recovery.clone(),
        now: &ctx_core::evidence::now(),
        secret_key_file: None,
    })?;
    let shown = display(dir, &g.cwd);
    let mut report = String::new();
    for f in &c.files {
        report.push_str(&format!("  created  {f}\n"));
    }
    report.push_str(&format!(
        "Initialised personal vault `{id}` in {shown} (vault {})\n\
         Secret key: {}\n  stored in {} (0600). Keep a copy offline: without it and your password\n  the vault cannot be opened (docs/personal.md).\n\
         Next: ctx -C {shown} validate --strict\n      ctx -C {shown} serve\n",
        c.vault,
        c.secret_key.as_str(),
        c.secret_key_file.display()
    ));
    super::io_result(p.out(&report))?;
    Ok(Exit::Ok)
}
