//! `ctx get <id>[@version]`: one object, as the consumer may see it (the library's
//! authorized view decides). A denied object and a missing one are reported identically.

use clap::Args;
use serde_json::Value;

use ctx_core::bundle::render;
use ctx_core::disclose::{self, Findings, Private};
use ctx_core::error::{Exit, Result};
use ctx_core::model::ObjectRef;
use ctx_core::time::Instant;

use super::args::{parse_at, ConsumerArgs, DocumentFormat};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct GetArgs {
    /// `id` or `id@version`.
    #[arg(add = super::args::completion::objects())]
    pub id: String,
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Evaluate lifecycle at this instant or date (default: now).
    #[arg(long, value_name = "WHEN", value_parser = parse_at)]
    pub at: Option<Instant>,
    /// age identity that opens a private object (repeatable; default: $CTX_AGE_IDENTITY,
    /// then ~/.config/ctx/age/identity.txt). Decrypted only when the consumer may read it.
    #[arg(long = "identity", value_name = "FILE")]
    pub identity: Vec<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "yaml")]
    pub format: DocumentFormat,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Show the object even when error-level findings (a detected secret, an id that
    /// slips past an exclude) concern it; they are listed on stderr.
    #[arg(long)]
    pub allow_findings: bool,
}

pub fn run(g: &Global, p: &Printer, a: &GetArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let findings = match a.allow_findings {
        true => Findings::Allow,
        false => Findings::Refuse,
    };
    let shown = disclose::document(
        &repo,
        &a.who.who(),
        g.clock.at(a.at),
        &ObjectRef::parse(&a.id),
        &Private::Identities(a.identity.clone()),
        findings,
    )?;
    super::gate::note(p, &shown.let_through)?;
    if let Some(why) = &shown.unavailable {
        super::io_result(p.err(&format!(
            "note: `{}` is private and its encrypted fields are not shown: {why}\n",
            a.id
        )))?;
    }
    let d = shown.document;
    let mut fields = d.fields;
    fields.insert("lifecycle".into(), Value::from(d.lifecycle.as_str()));
    fields.insert(
        "file".into(),
        Value::from(repo.objects[d.index].origin.file.clone()),
    );
    let doc = Value::Object(fields);
    let text = match a.format {
        DocumentFormat::Json => render::json(&doc),
        DocumentFormat::Yaml => render::yaml(&doc),
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    super::leave_to_exit(repo);
    Ok(Exit::Ok)
}
