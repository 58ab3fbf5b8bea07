//! `ctx get <id>[@version]`: one object, subject to authorization. A denied object
//! and a missing one are reported identically.

use clap::Args;
use serde_json::{Map, Value};

use ctx_core::bundle::render;
use ctx_core::error::{Error, Exit, Result};
use ctx_core::evidence::Record;
use ctx_core::model::{ObjectRef, Redaction};

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
}

pub fn run(g: &Global, p: &Printer, a: &GetArgs) -> Result<Exit> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let at = super::resolve::at_flag(a.at.as_deref())?;
    let want = ObjectRef::parse(&a.id);
    let v = view::view(&repo, &a.who, at, true)?;
    let mut hits: Vec<(usize, ctx_core::model::Lifecycle)> = v
        .visible
        .iter()
        .copied()
        .filter(|(i, _)| {
            let o = &repo.objects[*i];
            o.id == want.id && (want.version.is_none() || o.version == want.version)
        })
        .collect();
    // Without a version: the current one (highest version that is not superseded), else the newest.
    hits.sort_by_key(|(i, s)| {
        (
            *s != ctx_core::model::Lifecycle::Superseded,
            repo.objects[*i].version,
        )
    });
    let Some(&(i, state)) = hits.last() else {
        return Err(Error::NotFound(format!(
            "no object `{}` is visible here",
            a.id
        )));
    };
    let o = &repo.objects[i];
    let object_rules: Vec<Redaction> = ctx_core::resolve::object_redactions(o);
    let rules = view::rules(&repo, &v, &object_rules);
    let mut fields: Map<String, Value> = o.fields();
    if let Some(c @ (Value::Object(_) | Value::Array(_))) = fields.get_mut("content") {
        let applied = ctx_core::resolve::redact::redact(c, &rules);
        if !applied.is_empty() {
            fields.insert("redacted".into(), Value::from(applied));
        }
    }
    fields.insert("lifecycle".into(), Value::from(state.as_str()));
    fields.insert("file".into(), Value::from(o.origin.file.clone()));
    let doc = Value::Object(fields);
    let text = if a.format == "json" {
        render::json(&doc)
    } else {
        render::yaml(&doc)
    };
    ctx_core::evidence::record(
        &repo.manifest,
        Record::read(a.who.agent.as_deref(), &a.who.role, [o.id.clone()]),
    )?;
    super::io_result(p.out(&text))?;
    Ok(Exit::Ok)
}
