//! `ctx export --target agents-md|claude-md|cursor-rules`: the resolved context as
//! an agent instruction file, with a generated-file marker; `--check` for CI.

use std::path::PathBuf;

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::export::plan::{self, Invocation, Verdict};
use ctx_core::export::{self, State, Target};

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

use ctx_core::diag::render::terminal_safe;
use ctx_core::disclose;
use ctx_core::model::Classification;
use ctx_core::view::output;

use super::args::ResolveScopeArgs;
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Which file to write.
    #[arg(long, value_enum)]
    pub target: TargetArg,
    #[command(flatten)]
    pub scope: ResolveScopeArgs,
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
    /// Write the file even when error-level findings (a detected secret, an invalid
    /// object) concern objects it contains; they are listed on stderr.
    #[arg(long)]
    pub allow_findings: bool,
    /// Let objects up to this classification into the file. By default an agent
    /// file carries nothing above `internal` (it is meant for git); what is left out
    /// is named on stderr.
    #[arg(long, value_name = "LEVEL", value_parser = parse_classification)]
    pub allow_classification: Option<Classification>,
}

fn parse_classification(s: &str) -> std::result::Result<Classification, String> {
    Classification::parse(s)
        .ok_or_else(|| format!("expected one of {}", Classification::names().join(", ")))
}

/// Name on stderr what the file leaves out for its classification ceiling.
fn ceiling_note(
    p: &Printer,
    d: &disclose::Disclosure,
    ceiling: Option<Classification>,
) -> Result<()> {
    let left = &d.withheld_for_ceiling;
    if left.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = left
        .iter()
        .map(|(id, c)| format!("  {} ({c})\n", terminal_safe(id)))
        .collect();
    super::io_result(p.err(&format!(
        "note: left out {} object(s) above `{}`, this file's ceiling (it is meant for git):\n{}  \
         pass --allow-classification LEVEL to let them in\n",
        left.len(),
        ceiling.unwrap_or(Classification::Internal),
        shown.concat()
    )))
}

/// The command line that regenerates the file (recorded in its marker).
fn command_line(a: &ExportArgs) -> String {
    let who = &a.scope.who;
    plan::command_line(&Invocation {
        target: a.target.into(),
        agent: who.agent.as_deref(),
        roles: &who.role,
        task: a.scope.task.as_deref(),
        include: &a.scope.include,
        output: a.output.as_deref(),
        allow_private_output: a.allow_private_output,
        allow_findings: a.allow_findings,
        allow_classification: a.allow_classification,
    })
}

pub fn run(g: &Global, p: &Printer, a: &ExportArgs) -> Result<Exit> {
    // `--check` hands nothing out, so findings do not stop it.
    let mut ask = super::resolve::scope_ask(g, &a.scope, a.allow_findings || a.check);
    let target = Target::from(a.target);
    ask.ceiling = Some(a.allow_classification.unwrap_or(target.ceiling()));
    // Content is kept only for objects this consumer may read.
    let load = g.load_options(ctx_core::load::DEFAULT_MAX_FILE_SIZE);
    let mut repo = disclose::open(g.dir.as_deref(), &g.cwd, &load, &ask)?;
    if a.scope.who.is_empty() {
        return Err(Error::Usage(
            "export needs a consumer: pass --role ROLE or --agent AGENT".into(),
        ));
    }
    let mut disclosure = disclose::resolve(&repo, &ask)?;
    if !a.check {
        super::gate::note(p, &disclosure.let_through)?;
        ceiling_note(p, &disclosure, ask.ceiling)?;
    }
    let started_at = ctx_core::time::format(&g.clock.now());
    let bundle = disclosure.compile_releasing(&mut repo, &g.clock.stamp());
    // Only the manifest is read from here on: the objects are released before the
    // file is rendered and compared, which for a whole bundle are tens of MiB each.
    let ctx_core::load::Repo {
        manifest, objects, ..
    } = repo;
    drop(objects);
    let path = match &a.output {
        Some(o) => super::input::absolute(&g.cwd, o),
        None => manifest.root.join(target.default_path()),
    };
    let shown = a
        .output
        .clone()
        .unwrap_or_else(|| target.default_path().into());
    // Decrypted private content never goes into the work tree unless explicitly allowed,
    // and never into a file git tracks; `--check` holds the file to the same rule.
    if disclosure.holds_private() {
        output::check_private_output(&manifest, &path, a.allow_private_output, !a.check)?;
    }
    let text = export::render(target, &bundle, &command_line(a));
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
    let digest = bundle["digest"].as_str().unwrap_or("");
    let shown = shown.display();
    let state = plan::existing_state(&path, &text, digest)?;
    let failed = match plan::verdict(state, a.check, a.force) {
        Verdict::UpToDate => {
            let again = if a.check { "" } else { "already " };
            super::io_result(p.out(&format!("{shown} is {again}up to date ({digest})\n")))?;
            return Ok(Exit::Ok);
        }
        Verdict::RefuseForeign => {
            return Err(Error::Invalid(format!(
                "refusing to overwrite {shown}: ctx did not generate it (it has no `{}` marker). \
                 Move it away, or pass --force to replace it",
                export::MARKER
            )))
        }
        Verdict::Write => None,
        Verdict::CheckFailed(State::Missing) => Some(format!("{shown} is missing")),
        Verdict::CheckFailed(State::Stale(recorded)) => Some(format!(
            "{shown} is out of date (it records {}, the repository now resolves to {digest})",
            recorded.as_deref().unwrap_or("no digest")
        )),
        Verdict::CheckFailed(_) => Some(format!("{shown} was not generated by ctx export")),
    };
    if let Some(failed) = failed {
        super::io_result(p.err(&format!("✗ {failed}\n  fix: run `{}`\n", command_line(a))))?;
        return Ok(Exit::Invalid);
    }
    // The file and its evidence (audit event, receipt when the policy asks) together.
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, &e))?;
    }
    let delivery = disclose::Delivery {
        event: ctx_core::evidence::BundleEvent::Bundle,
        format: "markdown",
        started_at: &started_at,
        sign: Default::default(),
    };
    let fill = |f: &mut dyn std::io::Write| f.write_all(text.as_bytes());
    disclosure.deliver(
        &manifest,
        &bundle,
        &delivery,
        Some(text.as_bytes()),
        disclose::Sink::File {
            path: &path,
            fill: Box::new(fill),
        },
    )?;
    let n = bundle["objects"].as_array().map_or(0, Vec::len);
    super::io_result(p.out(&format!("wrote {shown} ({n} objects, {digest})\n")))?;
    Ok(Exit::Ok)
}
