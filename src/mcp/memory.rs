//! `context_set`: an agent-written value never lands directly.
//!
//! - Where the manifest grants the agent write access to a *new* id
//!   (`extensions.ctx.write`), the value goes through the governed write path:
//!   the planned file is parsed as the loader would, authorized
//!   (`write::authorize_write`), checked so the repository gains no error, and
//!   written atomically under the repository lock, carrying
//!   `extensions.ctx.memory.written_by`. Sensitive and critical writes need the
//!   user's approval first (the server's gate).
//! - Everything else becomes a memory-update proposal through the exchange,
//!   recorded with `written_by` = the agent, for a person to review. That
//!   includes new versions of existing objects until the library's governed
//!   supersede is callable without the CLI printer.
//!
//! Planning has no side effects (MRTR runs a tool twice); [`commit`] plans
//! again under the lock and writes.

use serde_json::{json, Map, Value};

use ctx_core::error::{Error, Result};
use ctx_core::load::Repo;
use ctx_core::object::Format;
use ctx_core::resolve::Consumer;
use ctx_core::write::{self, emit, FileWrite};

use super::approval::Tier;
use super::service::{Service, MEMORY_EXTENSION};
use crate::cli::{ColorChoice, Printer};

/// The largest value `context_set` accepts, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// What a `context_set` call will do.
#[derive(Debug, Clone)]
pub enum Plan {
    /// A new object through the governed write path.
    Write { rel: String, tier: Tier },
    /// A proposal for review; `reason` says why it is not a write.
    Propose { tier: Option<Tier>, reason: String },
}

/// Decide, without writing anything.
pub fn plan(svc: &Service, id: &str, value: &str, tier: Option<Tier>) -> Result<Plan> {
    let (repo, consumer) = svc.load()?;
    Ok(
        match planned_write(svc, &repo, &consumer, id, value, tier)? {
            Ok((rel, _, tier)) => Plan::Write { rel, tier },
            Err(reason) => Plan::Propose { tier, reason },
        },
    )
}

/// Write the object (a [`Plan::Write`] that was approved when it needed to be).
/// Re-plans under the lock: if anything changed so the write is no longer
/// allowed, nothing is written.
pub fn commit(svc: &Service, id: &str, value: &str, tier: Option<Tier>) -> Result<String> {
    let root = svc.load()?.0.manifest.root;
    let (_lock, _) = write::lock(&root).map_err(|e| Error::io(&root, &e))?;
    let (repo, consumer) = svc.load()?;
    let (rel, bytes, _) = planned_write(svc, &repo, &consumer, id, value, tier)?
        .map_err(|why| Error::Invalid(format!("refusing to write: {why} (nothing was written)")))?;
    write::apply(
        &repo.manifest.root,
        &[FileWrite {
            rel: rel.clone(),
            bytes,
            replaces: None,
        }],
    )
    .map_err(Error::Invalid)?;
    Ok(rel)
}

/// `Ok(Ok((path, bytes, tier)))`: the governed write is allowed; `Ok(Err(why))`:
/// it must be a proposal; `Err`: the value itself is unacceptable.
#[allow(clippy::type_complexity)]
fn planned_write(
    svc: &Service,
    repo: &Repo,
    consumer: &Consumer,
    id: &str,
    value: &str,
    tier: Option<Tier>,
) -> Result<std::result::Result<(String, Vec<u8>, Tier), String>> {
    let m = &repo.manifest;
    if repo.objects.iter().any(|o| o.id == id) {
        return Ok(Err(format!(
            "`{id}` already exists; a new version of existing context is reviewed before it is written"
        )));
    }
    let Some(rel) = write::default_path(m, id) else {
        return Ok(Err(format!(
            "no collection in this repository holds an id like `{id}`"
        )));
    };
    let Some(format) = Format::from_path(&rel) else {
        return Ok(Err(format!("{rel} is not an object file")));
    };
    let mut fields = Map::new();
    fields.insert("id".into(), json!(id));
    let collection_types = m
        .collections
        .iter()
        .any(|c| id.starts_with(&format!("{}.", c.name)) && c.defaults.contains_key("type"));
    if !collection_types {
        fields.insert("type".into(), json!("memory"));
    }
    fields.insert("authority".into(), json!("observed"));
    if let Some(t) = tier {
        fields.insert("classification".into(), json!(t.classification().as_str()));
    }
    fields.insert(
        "sources".into(),
        json!([{ "uri": format!("urn:ctx:mcp:{}:{}", consumer.kind.as_str(), consumer.id), "label": "written by an agent through ctx mcp" }]),
    );
    let now = crate::cli::resolve::generated_at();
    fields.insert("updated".into(), json!(now));
    fields.insert(
        "extensions".into(),
        json!({ MEMORY_EXTENSION: { "written_by": svc.who.id, "via": "mcp", "at": now } }),
    );
    let bytes = emit::document(format, &fields, Some(&Value::from(value))).into_bytes();
    let p = Printer::new(ColorChoice::Never);
    let obj = match crate::cli::add::planned_object(&p, repo, &rel, &bytes) {
        Ok(o) => o,
        Err(e) => {
            return Ok(Err(format!(
                "the value would not form a valid object ({e})"
            )))
        }
    };
    if let Err(why) = write::authorize_write(m, consumer, &obj, None) {
        return Ok(Err(why));
    }
    let tier = Tier::of(obj.meta.classification);
    let planned = write::planned_repo(repo, &[], vec![obj]);
    crate::cli::add::check_repository(&p, repo, &planned)?;
    Ok(Ok((rel, bytes, tier)))
}
