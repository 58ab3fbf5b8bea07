//! `ctx export --target …`: the resolved context as agent instruction files, each
//! with a generated-file marker; `--per-folder` for one file per mapped folder of a
//! monorepo; `--check` for CI.

mod files;
mod notes;

use std::path::PathBuf;

use clap::Args;

use ctx_core::disclose;
use ctx_core::error::{Error, Exit, Result};
use ctx_core::export::plan::{self, Invocation, Verdict};
use ctx_core::export::{self, Target};
use ctx_core::model::Classification;

use super::args::ResolveScopeArgs;
use super::{Global, Printer};

/// `--target`: clap's view of [`Target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetArg {
    /// AGENTS.md (the cross-agent convention; nested ones for --per-folder).
    AgentsMd,
    /// CLAUDE.md (Claude Code).
    ClaudeMd,
    /// .claude/rules/opencontext.md (Claude Code rules; `paths:` globs per folder).
    ClaudeRules,
    /// .github/copilot-instructions.md (GitHub Copilot, repository-wide).
    CopilotMd,
    /// .github/instructions/opencontext.instructions.md (GitHub Copilot, `applyTo:` globs).
    CopilotRules,
    /// .cursor/rules/opencontext.mdc (Cursor project rules).
    CursorRules,
    /// GEMINI.md (Gemini CLI).
    GeminiMd,
    /// .windsurf/rules/opencontext.md (Windsurf rules, `trigger:` front matter).
    WindsurfRules,
}

impl From<TargetArg> for Target {
    fn from(t: TargetArg) -> Target {
        match t {
            TargetArg::AgentsMd => Target::AgentsMd,
            TargetArg::ClaudeMd => Target::ClaudeMd,
            TargetArg::ClaudeRules => Target::ClaudeRules,
            TargetArg::CopilotMd => Target::CopilotMd,
            TargetArg::CopilotRules => Target::CopilotRules,
            TargetArg::CursorRules => Target::CursorRules,
            TargetArg::GeminiMd => Target::GeminiMd,
            TargetArg::WindsurfRules => Target::WindsurfRules,
        }
    }
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Which file to write.
    #[arg(long, value_enum)]
    pub target: TargetArg,
    #[command(flatten)]
    pub scope: ResolveScopeArgs,
    /// Where to write (default: the target's file in the repository folder, e.g.
    /// AGENTS.md or .cursor/rules/opencontext.mdc).
    #[arg(long, short = 'o', conflicts_with = "per_folder")]
    pub output: Option<PathBuf>,
    /// Write one file per folder of the manifest's `extensions.ctx.export.folders`,
    /// each with the objects that folder's id patterns name (nested AGENTS.md,
    /// CLAUDE.md, GEMINI.md; one rules file per folder, scoped by globs).
    #[arg(long, conflicts_with = "include")]
    pub per_folder: bool,
    /// Write nothing; exit 1 when a file is missing or out of date.
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

/// The command line that regenerates the files (recorded in their marker).
fn command_line(a: &ExportArgs) -> String {
    let who = &a.scope.who;
    plan::command_line(&Invocation {
        target: a.target.into(),
        agent: who.agent.as_deref(),
        roles: &who.role,
        task: a.scope.task.as_deref(),
        include: &a.scope.include,
        output: a.output.as_deref(),
        per_folder: a.per_folder,
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
    if a.per_folder && !target.per_folder() {
        return Err(Error::Usage(format!(
            "--target {} is one repository-wide file; for one file per folder use --target copilot-rules (`applyTo:` globs)",
            target.name()
        )));
    }
    // Content is kept only for objects this consumer may read.
    let load = g.load_options(ctx_core::load::DEFAULT_MAX_FILE_SIZE);
    let mut repo = disclose::open(g.dir.as_deref(), &g.cwd, &load, &ask)?;
    if a.scope.who.is_empty() {
        return Err(Error::Usage(
            "export needs a consumer: pass --role ROLE or --agent AGENT".into(),
        ));
    }
    let command = command_line(a);
    let wanted = files::wanted(g, a, target, &repo.manifest)?;
    let started_at = ctx_core::time::format(&g.clock.now());
    let planned = files::render(g, a, target, &ask, &mut repo, wanted, &command)?;
    if !a.check {
        notes::handed_out(p, &planned, ask.ceiling)?;
    }
    // Only the manifest is read from here on: the objects are released before the
    // files are compared, which for a whole bundle are tens of MiB each.
    let ctx_core::load::Repo {
        manifest, objects, ..
    } = repo;
    drop(objects);
    if let [only] = &planned[..] {
        if a.output.is_some() && super::printer::output_file(a.output.as_deref()).is_none() {
            // `--output -`: the rendered file goes to stdout; there is no file to check.
            if a.check {
                return Err(Error::Usage(
                    "--check compares a file with what export would write; `--output -` names none"
                        .into(),
                ));
            }
            super::io_result(p.out(&only.text))?;
            return Ok(Exit::Ok);
        }
    }
    for f in &planned {
        if let Some(m) = plan::placement(&manifest, &g.cwd, target, &f.path, &f.text) {
            notes::misplaced(p, &f.shown, &m)?;
        }
    }
    let left = if a.per_folder {
        let written: Vec<PathBuf> = planned.iter().map(|f| f.path.clone()).collect();
        plan::leftovers(&manifest, &g.cwd, target, &command, &written)
    } else {
        Vec::new()
    };
    let verdicts: Vec<Verdict> = planned
        .iter()
        .map(|f| plan::verdict(f.state.clone(), a.check, a.force))
        .collect();
    // A file ctx did not generate stops the whole export before anything is written.
    if let Some(f) = planned
        .iter()
        .zip(&verdicts)
        .find_map(|(f, v)| (*v == Verdict::RefuseForeign).then_some(f))
    {
        return Err(Error::Invalid(format!(
            "refusing to overwrite {}: ctx did not generate it (it has no `{}` marker). \
             Move it away, or pass --force to replace it",
            f.shown,
            export::MARKER
        )));
    }
    if a.check {
        return notes::checked(p, &planned, &verdicts, &left, &command);
    }
    for (f, v) in planned.iter().zip(&verdicts) {
        if *v == Verdict::UpToDate {
            super::io_result(p.out(&format!(
                "{} is already up to date ({})\n",
                f.shown,
                f.digest()
            )))?;
            continue;
        }
        files::write(&manifest, f, &started_at)?;
        let n = f.bundle["objects"].as_array().map_or(0, Vec::len);
        super::io_result(p.out(&format!(
            "wrote {} ({n} objects, {})\n",
            f.shown,
            f.digest()
        )))?;
    }
    notes::leftovers(p, &left)?;
    Ok(Exit::Ok)
}
