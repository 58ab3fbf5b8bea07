//! `ctx export --target agents-md|claude-md|cursor-rules`: the resolved context as
//! an agent instruction file, with a generated-file marker; `--check` for CI.

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::evidence::{BundleEvent, Record};
use ctx_core::export::{self, State, Target};
use ctx_core::fs::{Existing, Mode};

/// `--target`: clap's view of [`Target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetArg {
    /// AGENTS.md (the cross-agent convention).
    AgentsMd,
    /// CLAUDE.md (Claude Code).
    ClaudeMd,
    /// .cursor/rules/opencontext.mdc (Cursor project rules).
    CursorRules,
}

impl From<TargetArg> for Target {
    fn from(t: TargetArg) -> Target {
        match t {
            TargetArg::AgentsMd => Target::AgentsMd,
            TargetArg::ClaudeMd => Target::ClaudeMd,
            TargetArg::CursorRules => Target::CursorRules,
        }
    }
}

use ctx_core::resolve::{self, ResolveOptions};
use ctx_core::view::{output, Who};

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Which file to write.
    #[arg(long, value_enum)]
    pub target: TargetArg,
    /// Export what this agent may see.
    #[arg(long, conflicts_with = "role", required_unless_present = "role")]
    pub agent: Option<String>,
    /// Export what these roles may see.
    #[arg(long = "role", num_args = 1..)]
    pub role: Vec<String>,
    /// Rank for this task.
    #[arg(long)]
    pub task: Option<String>,
    /// Resolve as of this instant or date (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// Where to write (default: AGENTS.md, CLAUDE.md or .cursor/rules/opencontext.mdc
    /// in the repository folder).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Write nothing; exit 1 when the file is missing or out of date.
    #[arg(long)]
    pub check: bool,
    /// Replace a file ctx did not generate.
    #[arg(long)]
    pub force: bool,
    /// Permit writing decrypted private content into the repository (the file is then
    /// kept out of git; a file git tracks is still refused).
    #[arg(long)]
    pub allow_private_output: bool,
    /// age identity for private collections (repeatable; default: $CTX_AGE_IDENTITY,
    /// then ~/.config/ctx/age/identity.txt).
    #[arg(long = "identity", value_name = "FILE")]
    pub identity: Vec<PathBuf>,
}

/// The command line that regenerates the file (recorded in its marker).
fn command_line(a: &ExportArgs) -> String {
    let quote = |s: &str| {
        if s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,/:@+=".contains(c))
        {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    let mut c = format!("ctx export --target {}", Target::from(a.target).name());
    if let Some(x) = &a.agent {
        c.push_str(&format!(" --agent {}", quote(x)));
    }
    for r in &a.role {
        c.push_str(&format!(" --role {}", quote(r)));
    }
    if let Some(t) = &a.task {
        c.push_str(&format!(" --task {}", quote(t)));
    }
    if let Some(o) = &a.output {
        c.push_str(&format!(" --output {}", quote(&o.to_string_lossy())));
    }
    if a.allow_private_output {
        c.push_str(" --allow-private-output");
    }
    c
}

pub fn run(g: &Global, p: &Printer, a: &ExportArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let who = Who {
        agent: a.agent.clone(),
        roles: a.role.clone(),
    };
    let mut opts = ResolveOptions::new(who, super::resolve::at_flag(a.at.as_deref())?);
    opts.task = a.task.clone();
    opts.offline = g.offline;
    opts.identities = a.identity.clone();
    let (resolution, bundle) = resolve::bundle(&repo, &opts, &super::resolve::generated_at())?;
    let path = match &a.output {
        Some(o) if o.is_absolute() => o.clone(),
        Some(o) => g.cwd.join(o),
        None => repo
            .manifest
            .root
            .join(Target::from(a.target).default_path()),
    };
    let shown = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(Target::from(a.target).default_path()));
    // Decrypted private content never goes into the work tree unless explicitly allowed,
    // and never into a file git tracks; `--check` holds the file to the same rule.
    if resolution.holds_private() {
        output::check_private_output(&repo.manifest, &path, a.allow_private_output, !a.check)?;
    }
    let text = export::render(a.target.into(), &bundle, &command_line(a));
    if a.output.is_some() && super::printer::output_file(a.output.as_deref()).is_none() {
        // `--output -`: the rendered file goes to stdout; there is no file to check.
        if a.check {
            return Err(Error::Usage(
                "--check compares a file with what export would write; `--output -` names none"
                    .into(),
            ));
        }
        super::io_result(p.out(&text))?;
        return Ok(Exit::Ok);
    }
    let digest = bundle["digest"].as_str().unwrap_or("").to_string();
    let existing = match std::fs::read(&path) {
        Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(&path, &e)),
    };
    let shown = shown.display();
    let state = export::state(existing.as_deref(), &text, &digest);
    let verdict = match (&state, a.check) {
        (State::Current, _) => {
            let again = if a.check { "" } else { "already " };
            super::io_result(p.out(&format!("{shown} is {again}up to date ({digest})\n")))?;
            return Ok(Exit::Ok);
        }
        (State::Foreign, false) if !a.force => {
            return Err(Error::Invalid(format!(
                "refusing to overwrite {shown}: ctx did not generate it (it has no `{}` marker). \
                 Move it away, or pass --force to replace it",
                export::MARKER
            )))
        }
        (_, false) => None,
        (State::Missing, true) => Some(format!("{shown} is missing")),
        (State::Foreign, true) => Some(format!("{shown} was not generated by ctx export")),
        (State::Stale(recorded), true) => Some(format!(
            "{shown} is out of date (it records {}, the repository now resolves to {digest})",
            recorded.as_deref().unwrap_or("no digest")
        )),
    };
    if let Some(verdict) = verdict {
        super::io_result(p.err(&format!("✗ {verdict}\n  fix: run `{}`\n", command_line(a))))?;
        return Ok(Exit::Invalid);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
    }
    ctx_core::evidence::record_after(
        &repo.manifest,
        Some(Record::bundle(BundleEvent::Bundle, &bundle)),
        || {
            ctx_core::fs::write_atomic(&path, text.as_bytes(), Mode::Preserve, Existing::Replace)
                .map_err(|e| Error::io(&path, &e))
        },
    )?;
    super::io_result(p.out(&format!(
        "wrote {shown} ({} objects, {digest})\n",
        bundle["objects"].as_array().map_or(0, Vec::len)
    )))?;
    Ok(Exit::Ok)
}
