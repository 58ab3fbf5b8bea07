//! `add` and `supersede` as a plan and an apply. Planning is pure: it reads the
//! loaded repository and returns the exact files that would be written, the
//! repository as it would then be, and what the audit log will record; every check
//! (id, authorization, schema, promotion, the repository staying valid) has run by
//! then. Applying writes the planned files atomically under the repository lock a
//! [`Session`] holds, with the audit event begun before and committed after.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::diag::{Code, Diagnostic, Severity};
use crate::error::{Error, Exit, Result};
use crate::evidence::{Record, WriteKind};
use crate::fs::{confine, RepoLock};
use crate::load::{self, LoadOptions, Repo};
use crate::manifest::{roles, Manifest};
use crate::model::{ObjectRef, Status};
use crate::object::{ContextObject, Format};
use crate::resolve::Consumer;
use crate::time::{Clock, Instant};
use crate::validate::{self, Index, ValidateOptions};
use crate::view::{View, Who};

use super::signoff;
use super::{emit, FileWrite};

/// The fields a writer asks for (flags of `add` and `supersede`).
#[derive(Debug, Clone, Default)]
pub struct Fields {
    pub title: Option<String>,
    /// The content: Markdown text, or structured data (a JSON value, written
    /// into a `.json` or `.yaml` file; only structured content can be redacted).
    pub content: Option<Value>,
    pub layer: Option<String>,
    pub authority: Option<String>,
    pub owner: Option<String>,
    pub classification: Option<String>,
    /// Where the content came from: recorded as `sources: [{uri: ...}]`.
    pub sources: Vec<String>,
    /// Declare the object its own origin (`canonical_source: true`).
    pub canonical_source: bool,
    pub tags: Vec<String>,
    /// Any other top-level field, already parsed ([`parse_assignment`]).
    pub set: Vec<(String, Value)>,
}

impl Fields {
    /// Does this ask for any change at all?
    pub fn is_empty(&self) -> bool {
        self.content.is_none()
            && [
                &self.title,
                &self.layer,
                &self.authority,
                &self.owner,
                &self.classification,
            ]
            .iter()
            .all(|x| x.is_none())
            && self.sources.is_empty()
            && !self.canonical_source
            && self.tags.is_empty()
            && self.set.is_empty()
    }

    /// Write the requested fields over `fields`.
    fn apply(&self, fields: &mut Map<String, Value>) {
        for (k, v) in [
            ("title", &self.title),
            ("layer", &self.layer),
            ("authority", &self.authority),
            ("owner", &self.owner),
            ("classification", &self.classification),
        ] {
            if let Some(v) = v {
                fields.insert(k.into(), Value::from(v.as_str()));
            }
        }
        if !self.sources.is_empty() {
            let list = self.sources.iter().map(|u| serde_json::json!({ "uri": u }));
            fields.insert("sources".into(), Value::Array(list.collect()));
        }
        if self.canonical_source {
            fields.insert("canonical_source".into(), Value::Bool(true));
        }
        if !self.tags.is_empty() {
            fields.insert("tags".into(), Value::from(self.tags.clone()));
        }
        for (k, v) in &self.set {
            fields.insert(k.clone(), v.clone());
        }
    }
}

/// Fields a writer never sets by name: identity and the version chain are ctx's.
const RESERVED: [&str; 6] = [
    "id",
    "type",
    "version",
    "supersedes",
    "superseded_by",
    "content",
];

/// Parse `KEY=VALUE` (`--set`): VALUE is JSON when it parses as JSON (`true`, `3`,
/// `["a","b"]`, `{"required":true}`), else a string.
pub fn parse_assignment(s: &str) -> std::result::Result<(String, Value), super::WriteError> {
    use super::WriteError;
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| WriteError::NotAssignment(s.to_string()))?;
    let k = k.trim();
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !plain {
        return Err(WriteError::BadFieldName(k.to_string()));
    }
    if RESERVED.contains(&k) {
        return Err(WriteError::Reserved(k.to_string()));
    }
    let value = crate::json::parse_slice(v.as_bytes())
        .ok()
        .unwrap_or_else(|| Value::from(v));
    Ok((k.to_string(), value))
}

/// A write request: who writes, what, and where.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub who: Who,
    pub fields: Fields,
    /// Where to write (relative to `cwd`; must be inside a collection). Default: derived from the id.
    pub file: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Permit canonical or approved authority: promotion is an explicit governance act.
    pub promote: bool,
    /// The person writing, by name (`--as`): the sign-off and the audit event
    /// name them. None: the writer the flags name, else the local user.
    pub signer: Option<String>,
    /// The write commits a reviewed proposal: its provenance goes with it.
    pub proposal: Option<Proposed>,
}

/// Where a committed proposal came from. The written version says so, keeps
/// its proposer's confidence and sources, and is never its own origin: an
/// agent's claim is `observed` unless a person promotes it.
#[derive(Debug, Clone, Default)]
pub struct Proposed {
    pub id: String,
    /// Through which door: `mcp`, `context-layer`.
    pub door: String,
    pub proposed_by: String,
    pub confidence: Option<f64>,
    /// Where the claim came from (replaces the sources a new version inherits).
    pub sources: Vec<String>,
    /// Members this door adds under `extensions.ctx.proposal`.
    pub extra: Map<String, Value>,
}

/// The extension a committed proposal's provenance is kept under.
pub const PROPOSAL_EXTENSION: &str = "ctx.proposal";

impl Proposed {
    /// Make `fields` (inherited, then the request's) say where they came from;
    /// `authority_given`: the committer chose the authority (else `observed`).
    pub fn apply(
        &self,
        fields: &mut Map<String, Value>,
        committed_by: &str,
        authority_given: bool,
    ) {
        // Not the proposer's to inherit: being the origin, and a confidence or
        // approval given to the previous content.
        for k in ["canonical_source", "confidence", "approval"] {
            fields.remove(k);
        }
        if !authority_given {
            fields.insert("authority".into(), Value::from("observed"));
        }
        if let Some(c) = self.confidence {
            fields.insert("confidence".into(), Value::from(c));
        }
        if !self.sources.is_empty() {
            let list = self.sources.iter().map(|u| serde_json::json!({ "uri": u }));
            fields.insert("sources".into(), Value::Array(list.collect()));
        }
        let mut ext = serde_json::json!({
            "proposal": self.id,
            "door": self.door,
            "proposed_by": self.proposed_by,
            "committed_by": committed_by,
        });
        if let Some(c) = self.confidence {
            ext["confidence"] = Value::from(c);
        }
        for (k, v) in &self.extra {
            ext[k] = v.clone();
        }
        let mut extensions = match fields.remove("extensions") {
            Some(Value::Object(e)) => e,
            _ => Map::new(),
        };
        extensions.insert(PROPOSAL_EXTENSION.into(), ext);
        fields.insert("extensions".into(), Value::Object(extensions));
    }
}

impl Request {
    /// Who the sign-off and the audit event name.
    pub fn actor(&self) -> crate::audit::Actor {
        match &self.signer {
            Some(name) => crate::audit::Actor {
                kind: "human",
                id: name.clone(),
                roles: Vec::new(),
            },
            None => crate::audit::Actor::from_flags(self.who.agent.as_deref(), &self.who.roles),
        }
    }

    /// The fields asked for, then (for a proposal) its provenance.
    fn fill(&self, fields: &mut Map<String, Value>) {
        self.fields.apply(fields);
        if let Some(p) = &self.proposal {
            // The claim is the content: an inherited content source would contradict it.
            if self.fields.content.is_some() {
                fields.remove("content_uri");
            }
            let a = self.actor();
            p.apply(
                fields,
                &format!("{}:{}", a.kind, a.id),
                self.fields.authority.is_some(),
            );
        }
    }
}

/// What a write will do: the files, the repository after them, and its audit record.
#[derive(Debug)]
pub struct Plan {
    pub writes: Vec<FileWrite>,
    /// The repository as it will be once the files are written.
    pub planned: Repo,
    /// One line for people: `added policies.returns in context/policies/returns.md`.
    pub summary: String,
    pub who: Who,
    /// Who the audit event (and sign-off) names.
    actor: crate::audit::Actor,
    kind: WriteKind,
    id: String,
    decision: bool,
    /// The sign-off a promotion (or a supersede of a signed-off object) records
    /// in `.ctx/signoffs/`, written after the object.
    pub signoff: Option<signoff::Pending>,
}

impl Plan {
    /// The planned files as the writer's authorized view shows them: content it may
    /// not see is redacted (or withheld); a file whose object it sees whole is shown
    /// byte for byte. This is what a dry run prints.
    pub fn shown(&self, at: Instant) -> Result<Vec<FileWrite>> {
        let v = View::open(&self.planned, &self.who, at)?;
        Ok(self
            .writes
            .iter()
            .map(|w| shown_write(&v, &self.planned, w))
            .collect())
    }
}

fn shown_write(v: &View<'_>, planned: &Repo, w: &FileWrite) -> FileWrite {
    let Some(i) = planned.objects.iter().position(|o| o.origin.file == w.rel) else {
        return w.clone();
    };
    let o = &planned.objects[i];
    let content = match v.inline_content(i) {
        Ok(s) if s.redacted.is_empty() => return w.clone(),
        Ok(s) => s.content.map(|c| c.into_owned()),
        Err(why) => Some(Value::from(format!("(content not shown: {})", why.detail))),
    };
    let fields: Map<String, Value> = o
        .fields()
        .into_iter()
        .filter(|(k, _)| k != "content" && !o.supplied(k))
        .collect();
    FileWrite {
        rel: w.rel.clone(),
        bytes: emit::document(o.origin.format, &fields, content.as_ref()).into_bytes(),
        replaces: w.replaces.clone(),
    }
}

/// A repository opened for writing: the lock is held from before the load until
/// the session ends, so what was planned is what gets replaced.
pub struct Session {
    pub repo: Repo,
    _lock: RepoLock,
}

impl Session {
    /// Find the manifest (as `ctx -C` does), take the repository lock, then load.
    pub fn open(dir: Option<&Path>, cwd: &Path, opts: &LoadOptions) -> Result<Session> {
        let (manifest, _) = Manifest::discover(dir, cwd)?;
        let lock = RepoLock::acquire(&manifest.root).map_err(|e| Error::io(&manifest.root, &e))?;
        let (manifest, diags) = Manifest::discover(dir, cwd)?;
        Ok(Session {
            repo: load::load(manifest, diags, opts),
            _lock: lock,
        })
    }

    /// Write the plan as one transaction: the objects, their sign-off and
    /// their audit event all land, or (after a kill) the next writer
    /// completes them ([`crate::fs::txn`]).
    pub fn apply(&self, plan: &Plan) -> Result<()> {
        self.apply_with(plan, |_| Ok(()))
    }

    /// [`Session::apply`], with `extra` files staged into the same
    /// transaction (a proposal's review record, a pending receipt): they land
    /// with the objects or not at all.
    pub fn apply_with(
        &self,
        plan: &Plan,
        extra: impl FnOnce(&mut crate::fs::Txn) -> Result<()>,
    ) -> Result<()> {
        apply_plans(&self.repo.manifest, std::slice::from_ref(plan), extra)
    }
}

/// Apply plans made one after another (each over the one before's planned
/// repository) as one transaction: every file, sign-off and audit event, and
/// `extra`, or nothing. The caller holds the repository lock.
pub fn apply_plans(
    m: &Manifest,
    plans: &[Plan],
    extra: impl FnOnce(&mut crate::fs::Txn) -> Result<()>,
) -> Result<()> {
    let Some(first) = plans.first() else {
        return Ok(());
    };
    let kind = if plans.iter().any(|p| p.kind == WriteKind::Supersede) {
        WriteKind::Supersede
    } else {
        first.kind
    };
    let record = Record::Write {
        actor: first.actor.clone(),
        kind,
        objects: plans.iter().map(|p| p.id.clone()).collect(),
        decisions: plans
            .iter()
            .filter(|p| p.decision)
            .map(|p| p.id.clone())
            .collect(),
    };
    crate::evidence::record_transaction(m, Some(record), |txn| {
        for plan in plans {
            super::stage(txn, &m.root, &plan.writes)?;
            if let Some(p) = &plan.signoff {
                signoff::stage(txn, &m.root, p)?;
            }
        }
        extra(txn)
    })
}

/// Is `id` a well-formed object id? The one check the loader applies too.
pub use crate::pattern::valid_id;

/// Plan `add <id> --type <kind>`.
pub fn add(repo: &Repo, id: &str, kind: &str, req: &Request, clock: &Clock) -> Result<Plan> {
    add_unless_denied(repo, id, kind, req, clock)?.map_err(super::WriteError::refused)
}

/// [`add`], with the writer's missing authority kept apart from every other
/// refusal: a front end that turns "not yours to write" into a proposal tells
/// the two apart without reading messages.
pub fn add_unless_denied(
    repo: &Repo,
    id: &str,
    kind: &str,
    req: &Request,
    clock: &Clock,
) -> Result<std::result::Result<Plan, super::WriteError>> {
    if !valid_id(id) {
        return Err(Error::Usage(format!(
            "`{id}` is not a valid id: use dotted lowercase segments, e.g. `policies.returns`"
        )));
    }
    let m = &repo.manifest;
    let consumer = writer(m, &req.who)?;
    if let Some(o) = repo.objects.iter().find(|o| o.id == id) {
        return Err(Error::Invalid(format!(
            "`{id}` already exists ({}); durable context is superseded, never overwritten: run `ctx supersede {id}`",
            o.origin.file
        )));
    }
    let structured = is_structured(req.fields.content.as_ref());
    let rel = match &req.file {
        Some(f) => file_in_repo(&m.root, &req.cwd, f)?,
        None => super::default_path(m, id)
            .map(|rel| data_path(rel, structured))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "no collection matches the id `{id}`; pass --file <path inside a collection>"
                ))
            })?,
    };
    let format = format_of(&rel)?;
    check_format(&rel, format, structured)?;
    let mut fields = Map::new();
    fields.insert("id".into(), Value::from(id));
    fields.insert("type".into(), Value::from(kind));
    req.fill(&mut fields);
    fields.insert("updated".into(), Value::from(clock.stamp()));
    let content = req.fields.content.clone();
    let bytes = emit::document(format, &fields, content.as_ref()).into_bytes();
    let bytes = sealed(m, &rel, format, bytes)?;
    let obj = planned_object(repo, &rel, &bytes)?;
    if super::is_promotion(m, obj.meta.authority, None) && !req.promote {
        return Err(Error::Invalid(format!(
            "refusing to write {id} with authority `{}`: promotion to canonical or approved is an explicit \
             governance act — pass --promote if that is what you mean (nothing was written)",
            obj.meta.authority
        )));
    }
    if let Some(c) = &consumer {
        if let Err(denied) = super::authorize_write(m, c, &obj, None) {
            return Ok(Err(denied));
        }
    }
    // `--promote` is the sign-off: recorded so CI can tell it from a hand edit.
    let via = if req.proposal.is_some() {
        "proposal"
    } else {
        "add"
    };
    let signoff = signoff::needed(obj.meta.authority)
        .then(|| signoff_for(m, &obj, &bytes, req, clock, via))
        .transpose()?;
    let planned = super::planned_repo(repo, &[], vec![obj]);
    check_repository(repo, &planned)?;
    Ok(Ok(Plan {
        summary: with_signoff(format!("added {id} in {rel}"), signoff.as_ref()),
        writes: vec![FileWrite {
            rel: rel.clone(),
            bytes,
            replaces: None,
        }],
        planned,
        who: req.who.clone(),
        actor: req.actor(),
        kind: WriteKind::Write,
        id: id.to_string(),
        decision: kind == "decision",
        signoff,
    }))
}

/// Is this content structured data rather than Markdown text?
fn is_structured(content: Option<&Value>) -> bool {
    content.is_some_and(|c| !c.is_string())
}

/// A derived path for structured content is a `.json` file (Markdown holds text).
fn data_path(rel: String, structured: bool) -> String {
    match rel.rsplit_once('.') {
        Some((stem, "md")) if structured => format!("{stem}.json"),
        _ => rel,
    }
}

fn check_format(rel: &str, format: Format, structured: bool) -> Result<()> {
    if structured && format == Format::Markdown {
        return Err(Error::Usage(format!(
            "{rel}: structured content (--data) goes into a .json or .yaml file, not Markdown; \
             pass --file <name>.json or --file <name>.yaml"
        )));
    }
    Ok(())
}

/// Fields a new version never inherits: identity and chain (set afresh), timestamps,
/// and the content (given anew or carried over explicitly).
const NOT_INHERITED: [&str; 6] = [
    "version",
    "supersedes",
    "superseded_by",
    "created",
    "updated",
    "content",
];

/// `context/pricing/enterprise.v2.md` beside `context/pricing/enterprise.md`: where
/// a new version's file goes (also for committed proposals).
pub(crate) fn sibling(rel: &str, version: u64) -> String {
    let (dir, name) = rel.rsplit_once('/').map_or(("", rel), |(d, n)| (d, n));
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, "md"));
    let stem = match stem.rsplit_once(".v") {
        Some((s, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => s,
        _ => stem,
    };
    let file = format!("{stem}.v{version}.{ext}");
    if dir.is_empty() {
        file
    } else {
        format!("{dir}/{file}")
    }
}

/// The previous version's declared fields, made fit for a successor: approvals and
/// reviews were given to the previous content, so they do not carry over. Every
/// governance field (permissions, classification, redaction, lifecycle) does:
/// a new version never widens who may read the object.
pub(crate) fn inherited(prev: &ContextObject) -> Map<String, Value> {
    let mut f: Map<String, Value> = prev
        .fields()
        .into_iter()
        .filter(|(k, _)| !NOT_INHERITED.contains(&k.as_str()) && !prev.supplied(k))
        .collect();
    if let Some(Value::Object(approval)) = f.get_mut("approval") {
        approval.remove("approved_by");
        if approval.get("required").and_then(Value::as_bool) == Some(true)
            && prev.meta.status == Some(Status::Approved)
        {
            f.insert("status".into(), Value::from("pending"));
        }
    }
    if let Some(Value::Object(review)) = f.get_mut("review") {
        review.remove("last_review");
        review.remove("next_review");
    }
    f
}

/// Plan `supersede <id>[@version]`: a new version declaring what it replaces; the
/// previous version stays on disk. Versions without a declared number are annotated
/// with `version: 1` so the successor can name them.
pub fn supersede(repo: &Repo, target: &str, req: &Request, clock: &Clock) -> Result<Plan> {
    if req.fields.is_empty() {
        return Err(Error::Usage(
            "nothing to change: give the new --content (or --title, --authority, ...)".into(),
        ));
    }
    let m = &repo.manifest;
    let consumer = writer(m, &req.who)?;
    // What the writer may read, and sees, is the library's authorized view.
    let v = View::open(repo, &req.who, clock.now())?;
    let want = ObjectRef::parse(target);
    let idx = Index::new(&repo.objects);
    let sup = v.supersession();
    let all: Vec<usize> = idx.resolve(&ObjectRef {
        id: want.id.clone(),
        version: None,
    });
    let active: Vec<usize> = all
        .iter()
        .copied()
        .filter(|i| !sup.superseded.contains(i))
        .filter(|&i| want.version.is_none() || repo.objects[i].version == want.version)
        .collect();
    // A consumer that may not read the object is told it does not exist.
    let readable = |i: usize| v.authorize(i).is_ok();
    let Some(&prev_i) = active
        .iter()
        .filter(|&&i| readable(i))
        .max_by_key(|&&i| repo.objects[i].version)
    else {
        return Err(Error::NotFound(format!(
            "no active object `{target}` is visible here"
        )));
    };
    let prev = &repo.objects[prev_i];
    if active.iter().any(|&i| !readable(i)) {
        return Err(Error::Invalid(format!(
            "`{}` has active versions you may not read; ask their owner to supersede them",
            want.id
        )));
    }
    let next = all
        .iter()
        .map(|&i| repo.objects[i].version.unwrap_or(1))
        .max()
        .unwrap_or(1)
        + 1;
    let mut writes = Vec::new();
    let mut replaced = Vec::new();
    let mut added = Vec::new();
    let mut targets = Vec::new();
    for &i in &active {
        let o = &repo.objects[i];
        if o.version.is_some() {
            targets.push(o.key());
            continue;
        }
        if active.len() > 1 || all.iter().any(|&j| repo.objects[j].version == Some(1)) {
            return Err(Error::Invalid(format!(
                "{} declares no `version` and cannot be named next to the other versions of `{}`; \
                 add a `version` to it first",
                o.origin.file, o.id
            )));
        }
        let (annotated, write) = annotate(m, o)?;
        targets.push(annotated.key());
        replaced.push(o.origin.file.clone());
        writes.push(write);
        added.push(annotated);
    }
    let body = req.fields.content.clone().or_else(|| prev.content.clone());
    let structured = is_structured(body.as_ref());
    let rel = match &req.file {
        Some(f) => file_in_repo(&m.root, &req.cwd, f)?,
        None => data_path(sibling(&prev.origin.file, next), structured),
    };
    let format = format_of(&rel)?;
    check_format(&rel, format, structured)?;
    let mut fields = Map::new();
    fields.insert("id".into(), Value::from(want.id.as_str()));
    fields.insert("version".into(), Value::from(next));
    fields.insert("supersedes".into(), Value::from(targets.clone()));
    fields.extend(inherited(prev));
    req.fill(&mut fields);
    fields.insert("updated".into(), Value::from(clock.stamp()));
    let bytes = emit::document(format, &fields, body.as_ref()).into_bytes();
    let bytes = sealed(m, &rel, format, bytes)?;
    let obj = planned_object(repo, &rel, &bytes)?;
    // A proposal is an agent's claim: keeping even the predecessor's
    // canonical authority is a promotion for it.
    let raised = super::is_promotion(m, obj.meta.authority, Some(prev.meta.authority))
        || (req.proposal.is_some() && signoff::needed(obj.meta.authority));
    if raised && !req.promote {
        return Err(Error::Invalid(format!(
            "refusing to raise {} from `{}` to `{}`: promotion to canonical or approved is an explicit \
             governance act — pass --promote if that is what you mean (nothing was written)",
            want.id, prev.meta.authority, obj.meta.authority
        )));
    }
    if let Some(c) = &consumer {
        super::authorize_write(m, c, &obj, Some(prev)).map_err(super::WriteError::refused)?;
    }
    let via = if req.proposal.is_some() {
        "proposal"
    } else {
        "supersede"
    };
    let signoff = signoff::due(m, &obj, Some(prev), req.promote)
        .then(|| signoff_for(m, &obj, &bytes, req, clock, via))
        .transpose()?;
    added.push(obj);
    let planned = super::planned_repo(repo, &replaced, added);
    check_repository(repo, &planned)?;
    writes.push(FileWrite {
        rel,
        bytes,
        replaces: None,
    });
    let decision = planned
        .objects
        .iter()
        .any(|o| o.id == want.id && o.kind() == "decision");
    Ok(Plan {
        writes,
        planned,
        summary: with_signoff(
            format!(
                "{}@{next} supersedes {} (the previous version stays on disk)",
                want.id,
                targets.join(", ")
            ),
            signoff.as_ref(),
        ),
        who: req.who.clone(),
        actor: req.actor(),
        kind: WriteKind::Supersede,
        id: want.id,
        decision,
        signoff,
    })
}

/// The sign-off of a planned object, by the writer, now.
fn signoff_for(
    m: &Manifest,
    o: &ContextObject,
    bytes: &[u8],
    req: &Request,
    clock: &Clock,
    via: &str,
) -> Result<signoff::Pending> {
    let a = req.actor();
    signoff::plan(
        m,
        o,
        bytes,
        format!("{}:{}", a.kind, a.id),
        clock.stamp(),
        via,
    )
}

fn with_signoff(summary: String, s: Option<&signoff::Pending>) -> String {
    match s {
        Some(p) => format!(
            "{summary}; {} signed off by {} in {}",
            p.record.authority, p.record.by, p.rel
        ),
        None => summary,
    }
}

/// `o` annotated with `version: 1`, and the replacement of its file.
fn annotate(m: &Manifest, o: &ContextObject) -> Result<(ContextObject, FileWrite)> {
    let path = m.root.join(&o.origin.file);
    let old = std::fs::read(&path).map_err(|e| Error::io(&path, &e))?;
    let text = String::from_utf8_lossy(&old);
    let annotated = emit::annotate_version(&text, o.origin.format)
        .and_then(|t| {
            let parsed = super::parse_planned(m, &o.origin.file, t.as_bytes())?.object?;
            (parsed.id == o.id && parsed.version == Some(1)).then_some((parsed, t))
        })
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{} declares no `version`; add `version: 1` to it, then supersede it",
                o.origin.file
            ))
        })?;
    let write = FileWrite {
        rel: o.origin.file.clone(),
        bytes: annotated.1.into_bytes(),
        replaces: Some(old),
    };
    Ok((annotated.0, write))
}

/// The consumer writing, if one was named. Writes pass the policy gate like reads:
/// no write while role or agent definitions have errors.
fn writer(m: &Manifest, who: &Who) -> Result<Option<Consumer>> {
    roles::require_sound(m)?;
    if who.is_author() {
        return Ok(None);
    }
    Consumer::from_flags(m, who.agent.as_deref(), &who.roles).map(Some)
}

/// `--file` relative to the manifest folder: inside it, and a plain path.
pub fn file_in_repo(root: &Path, cwd: &Path, f: &Path) -> Result<String> {
    let rel = confine::rel_in_root(root, cwd, f).ok_or_else(|| {
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

fn format_of(rel: &str) -> Result<Format> {
    Format::from_path(rel).ok_or_else(|| {
        Error::Usage(format!(
            "{rel}: the file must end in .md, .yaml, .yml or .json"
        ))
    })
}

/// Parse the planned file as the loader would, refusing on schema errors.
/// Into a private collection the file is sealed in memory, and checked as it will be
/// on disk: plaintext never reaches the work tree, not even as a temporary file.
fn sealed(
    m: &crate::manifest::Manifest,
    rel: &str,
    format: Format,
    bytes: Vec<u8>,
) -> Result<Vec<u8>> {
    match super::seal::seal_if_private(m, rel, format, &bytes) {
        Ok(Some(sealed)) => Ok(sealed),
        Ok(None) => Ok(bytes),
        Err(e) => Err(e.refused()),
    }
}

fn planned_object(repo: &Repo, rel: &str, bytes: &[u8]) -> Result<ContextObject> {
    let m = &repo.manifest;
    let parsed = super::parse_planned(m, rel, bytes).ok_or_else(|| {
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
        return Err(Error::Refused {
            message: format!(
                "refusing to write {rel}: it would not pass validation (nothing was written)"
            ),
            findings: errors,
            help: None,
            exit: Exit::Invalid,
        });
    }
    parsed
        .object
        .ok_or_else(|| Error::Invalid(format!("{rel} would not hold an object")))
}

/// Refuse if the planned repository has errors the current one does not.
fn check_repository(repo: &Repo, planned: &Repo) -> Result<()> {
    let opts = ValidateOptions {
        strict: false,
        at: None,
    };
    let before = validate::validate(repo, opts);
    let after = validate::validate(planned, opts);
    let new = super::new_errors(&before, &after);
    if new.is_empty() {
        return Ok(());
    }
    let help = new
        .iter()
        .any(|d| d.code == Code::MissingProvenance)
        .then(|| {
            "pass --source <uri> (where it came from) or --canonical-source (it is the origin)"
                .to_string()
        });
    Err(Error::Refused {
        message: format!(
            "refusing to write: the repository would gain {} error(s) (nothing was written)",
            new.len()
        ),
        findings: new,
        help,
        exit: Exit::Invalid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_replace_a_version_suffix() {
        assert_eq!(
            sibling("context/p/enterprise.md", 2),
            "context/p/enterprise.v2.md"
        );
        assert_eq!(
            sibling("context/p/enterprise.v2.md", 3),
            "context/p/enterprise.v3.md"
        );
        assert_eq!(sibling("a.yaml", 2), "a.v2.yaml");
        assert_eq!(
            sibling("context/p/x.version.md", 2),
            "context/p/x.version.v2.md"
        );
    }

    fn proposal_request(authority: Option<&str>, promote: bool) -> Request {
        Request {
            fields: Fields {
                content: Some(Value::from("Refunds within 14 days.")),
                authority: authority.map(str::to_string),
                ..Fields::default()
            },
            promote,
            signer: Some("alice".into()),
            proposal: Some(Proposed {
                id: "prop_1".into(),
                door: "mcp".into(),
                proposed_by: "helper".into(),
                confidence: Some(0.7),
                sources: vec!["urn:ctx:mcp:agent:helper".into()],
                extra: Map::new(),
            }),
            ..Request::default()
        }
    }

    const CANONICAL: &str = "---\nid: policies.refunds\ntype: policy\nauthority: canonical\ncanonical_source: true\nconfidence: 1\n---\nWithin 30 days.\n";

    #[test]
    fn a_committed_proposal_is_observed_and_keeps_its_provenance() {
        let (dir, repo) = crate::testutil::repo_from(&[
            (
                "opencontext.yaml",
                "opencontext: \"1.0\"\nid: t\ncollections:\n  policies: ./policies/**\n",
            ),
            ("policies/refunds.md", CANONICAL),
        ]);
        let clock = Clock::fixed(crate::time::parse_timestamp("2026-01-01T00:00:00Z").unwrap());
        let p = supersede(
            &repo,
            "policies.refunds",
            &proposal_request(None, false),
            &clock,
        )
        .unwrap();
        let text = String::from_utf8(p.writes.last().unwrap().bytes.clone()).unwrap();
        assert!(text.contains("authority: observed"), "{text}");
        assert!(!text.contains("canonical_source"), "{text}");
        assert!(text.contains("confidence: 0.7"), "{text}");
        assert!(text.contains("urn:ctx:mcp:agent:helper"), "{text}");
        assert!(text.contains("\"committed_by\":\"human:alice\""), "{text}");
        assert!(p.signoff.is_none(), "nobody signed an agent's claim off");
        // Only a person's promotion makes it canonical, and the sign-off names them.
        let refused = supersede(
            &repo,
            "policies.refunds",
            &proposal_request(Some("canonical"), false),
            &clock,
        );
        assert!(refused.is_err());
        let p = supersede(
            &repo,
            "policies.refunds",
            &proposal_request(Some("canonical"), true),
            &clock,
        )
        .unwrap();
        let s = p.signoff.expect("a promotion is signed off");
        assert_eq!(s.record.by, "human:alice");
        drop(dir);
    }

    #[test]
    fn structured_content_goes_into_a_json_file() {
        let (_dir, repo) = crate::testutil::repo_from(&[(
            "opencontext.yaml",
            "opencontext: \"1.0\"\nid: t\ncollections:\n  configs: ./configs/**\n",
        )]);
        let clock = Clock::fixed(crate::time::parse_timestamp("2026-01-01T00:00:00Z").unwrap());
        let mut req = Request {
            fields: Fields {
                content: Some(serde_json::json!({"limit": 5})),
                ..Fields::default()
            },
            ..Request::default()
        };
        let p = add(&repo, "configs.limits", "config", &req, &clock).unwrap();
        assert_eq!(p.writes[0].rel, "configs/limits.json");
        req.file = Some(PathBuf::from("configs/limits.md"));
        req.cwd = repo.manifest.root.clone();
        let e = add(&repo, "configs.limits", "config", &req, &clock).unwrap_err();
        assert!(e.to_string().contains("structured content"), "{e}");
    }

    #[test]
    fn assignments_parse_json_or_keep_text() {
        assert_eq!(
            parse_assignment("status=draft").unwrap(),
            ("status".into(), Value::from("draft"))
        );
        assert_eq!(
            parse_assignment("review={\"interval\":\"90d\"}").unwrap().1["interval"],
            "90d"
        );
        assert_eq!(
            parse_assignment("approval_required=true").unwrap().1,
            Value::Bool(true)
        );
        assert!(parse_assignment("id=x").is_err());
        assert!(parse_assignment("Bad Key=1").is_err());
        assert!(parse_assignment("novalue").is_err());
    }
}
