//! `ctx get <id>[@version]`: one object, as the consumer may see it (the library's
//! authorized view decides). A denied object and a missing one are reported identically.

use clap::Args;
use serde_json::Value;

use ctx_core::bundle::render;
use ctx_core::error::{Exit, Result};
use ctx_core::evidence::Record;
use ctx_core::model::ObjectRef;

use super::view::{self, ConsumerArgs};
use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct GetArgs {
    /// `id` or `id@version`.
    pub id: String,
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// Evaluate lifecycle at this instant or date (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// `yaml` (default) or `json`.
    #[arg(long, default_value = "yaml", value_parser = ["yaml", "json"])]
    pub format: String,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(g: &Global, p: &Printer, a: &GetArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let at = super::resolve::at_flag(a.at.as_deref())?;
    let v = view::open(&repo, &a.who, at)?;
    let d = v.get(&ObjectRef::parse(&a.id))?;
    let mut fields = d.fields;
    fields.insert("lifecycle".into(), Value::from(d.lifecycle.as_str()));
    fields.insert(
        "file".into(),
        Value::from(repo.objects[d.index].origin.file.clone()),
    );
    let doc = Value::Object(fields);
    let text = if a.format == "json" {
        render::json(&doc)
    } else {
        render::yaml(&doc)
    };
    ctx_core::evidence::record(
        &repo.manifest,
        Record::read(
            a.who.agent.as_deref(),
            &a.who.role,
            [repo.objects[d.index].id.clone()],
        ),
    )?;
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(Exit::Ok)
}
