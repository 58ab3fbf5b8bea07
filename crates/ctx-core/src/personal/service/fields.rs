//! Field endpoints: list, get, put, delete, category, context. Every value leaves
//! through the consumer's [`Viewer`] and the token's scope; sensitive and critical
//! fields (and every agent delete) wait for the user's approval.

use zeroize::Zeroizing;

use crate::approvals::{self, Redeemed};
use crate::personal::audit::{Action, Entry};
use crate::personal::field::{inert, value_text, FieldId, ValueText};
use crate::personal::json::Obj;
use crate::personal::vault::{Field, Write};
use crate::personal::view::{FieldView, Reader};
use crate::personal::{Tier, CONTEXT_VERSION};

use super::{lock, now, now_text, Answer, Class, Gate, Open, Refusal, Service, Ticket, Who};

/// What a field request does with a field, for the token-mode check.
#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

/// Options of `GET /context/context`.
#[derive(Debug, Clone, Default)]
pub struct FieldQuery {
    /// Leave out fields above this tier (so nothing waits for approval).
    pub max_tier: Option<Tier>,
}

/// What a write did.
#[derive(Debug)]
pub struct WriteOutcome {
    pub created: bool,
    pub body: Zeroizing<String>,
}

impl Service {
    /// The one view this request reads fields through (library view + token scope).
    fn lens<'a>(&self, open: &'a Open, who: &'a Who) -> Answer<FieldView<'a>> {
        let reader = match who {
            Who::User { .. } => Reader::Owner,
            Who::Consumer { name, scope, .. } => Reader::Consumer { name, scope },
        };
        FieldView::open(&open.vault.governance, &open.vault.config, reader, now())
            .map_err(|e| Refusal::Unavailable(e.to_string()))
    }

    /// A value through the view; a withheld value is refused (reason only, never content).
    fn shown(&self, lens: &FieldView<'_>, f: &Field) -> Answer<ValueText> {
        lens.shown(f)
            .map_err(|w| Refusal::ScopeExceeded(format!("{} is withheld ({})", f.id.id, w.reason)))
    }

    /// A consumer token's mode must allow `access`; a refusal is audited
    /// (with `ids`). The user's own session may do both.
    fn require_mode(&self, who: &Who, access: Access, ids: &[&str]) -> Answer<()> {
        let Who::Consumer { mode, .. } = who else {
            return Ok(());
        };
        let (allowed, why) = match access {
            Access::Read => (mode.reads(), "this token may not read (mode write)"),
            Access::Write => (mode.writes(), "this token may not write (mode read)"),
        };
        if allowed {
            Ok(())
        } else {
            Err(self.deny(who, ids, Refusal::ModeDenied(why.into())))
        }
    }

    /// The field must lie within the token's scope; a refusal is audited.
    fn require_scope(&self, who: &Who, fid: &FieldId) -> Answer<()> {
        if who.in_scope(&fid.id) {
            return Ok(());
        }
        Err(self.deny(
            who,
            &[&fid.id],
            Refusal::ScopeExceeded(format!("{} is outside this token's scope", fid.id)),
        ))
    }

    fn deny(&self, who: &Who, ids: &[&str], r: Refusal) -> Refusal {
        let e = Entry::new(Action::Deny, who.name())
            .fields(ids.iter().map(|s| s.to_string()))
            .denied()
            .detail(r.constraint());
        match self.record(e) {
            Ok(()) => r,
            Err(u) => u,
        }
    }

    /// The approval gate: `Ok(None)` to proceed, `Ok(Some(ticket))` to wait.
    fn gate(
        &self,
        who: &Who,
        action: &str,
        items: Vec<approvals::Item>,
        parts: &[&str],
    ) -> Answer<Option<(Ticket, bool)>> {
        let Who::Consumer {
            name,
            hash,
            purpose,
            ..
        } = who
        else {
            return Ok(None);
        };
        if items.is_empty() {
            return Ok(None);
        }
        let mut all = vec![action, hash.as_str()];
        all.extend_from_slice(parts);
        let binding = approvals::binding(&all);
        let now = now();
        let mut a = lock(&self.access);
        let ids: Vec<String> = items.iter().map(|i| i.id.clone()).collect();
        match a.approvals.redeem(&binding, now) {
            Redeemed::Approved(_) => Ok(None),
            Redeemed::Denied(id) => {
                drop(a);
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                Err(self.deny(
                    who,
                    &refs,
                    Refusal::ApprovalDenied(format!(
                        "the user denied this request (approval {id})"
                    )),
                ))
            }
            Redeemed::Pending(id) => {
                let ap = a.approvals.get(&id).expect("live");
                Ok(Some((
                    Ticket {
                        approval: id.clone(),
                        expires_at: crate::time::format(&ap.expires_at),
                        fields: ids,
                    },
                    false,
                )))
            }
            Redeemed::None => {
                let ask = approvals::Ask {
                    action: action.to_string(),
                    consumer: format!("consumer {name}"),
                    purpose: purpose.clone(),
                    items,
                    binding,
                };
                let ap = a
                    .approvals
                    .request(ask, hash, now)
                    .map_err(|e| Refusal::Unavailable(e.to_string()))?;
                Ok(Some((
                    Ticket {
                        approval: ap.id.clone(),
                        expires_at: crate::time::format(&ap.expires_at),
                        fields: ids,
                    },
                    true,
                )))
            }
        }
    }

    fn open_state(&self) -> Answer<std::sync::RwLockReadGuard<'_, Option<Box<Open>>>> {
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        if st.is_none() {
            return Err(Refusal::VaultLocked);
        }
        Ok(st)
    }

    /// `GET /context/fields`: metadata of every field the caller may see; no values.
    pub fn list_fields(&self, bearer: Option<&str>) -> Answer<Zeroizing<String>> {
        let who = self.authenticate(bearer, Class::Read)?;
        let st = self.open_state()?;
        let open = st.as_ref().expect("open");
        let lens = self.lens(open, &who)?;
        let mut items = Vec::new();
        for f in open.vault.fields.values() {
            if !lens.may_see(f) {
                continue;
            }
            items.push(
                Obj::new()
                    .str("id", &f.id.id)
                    .str("category", &f.id.category)
                    .str("field_name", &f.id.name)
                    .str("sensitivity", f.tier.as_str())
                    .str("written_by", &f.written_by)
                    .raw(
                        "user_only_write",
                        if f.user_only_write { "true" } else { "false" },
                    )
                    .num("version", f.version)
                    .str("updated_at", &f.updated_at)
                    .finish(),
            );
        }
        Ok(Obj::new()
            .str("context_version", CONTEXT_VERSION)
            .array("fields", &items)
            .finish())
    }

    fn field_doc(&self, lens: &FieldView<'_>, who: &Who, f: &Field) -> Answer<Zeroizing<String>> {
        let value = self.shown(lens, f)?;
        let mut o = Obj::new()
            .str("id", &f.id.id)
            .str("category", &f.id.category)
            .str("field_name", &f.id.name)
            .raw("value", &value)
            .str("sensitivity", f.tier.as_str())
            .str("written_by", &f.written_by)
            .str("updated_at", &f.updated_at)
            .num("version", f.version);
        if let Some(w) = provenance_warning(who, f) {
            o = o.str("warning", &w);
        }
        Ok(o.finish())
    }

    /// `GET /context/fields/{id}`.
    pub fn get_field(&self, bearer: Option<&str>, id: &str) -> Answer<Gate<Zeroizing<String>>> {
        let who = self.authenticate(bearer, Class::Read)?;
        self.require_mode(&who, Access::Read, &[])?;
        let fid = FieldId::parse(id).map_err(Refusal::invalid)?;
        self.require_scope(&who, &fid)?;
        let st = self.open_state()?;
        let open = st.as_ref().expect("open");
        let lens = self.lens(open, &who)?;
        let Some(f) = open.vault.fields.get(&fid.id).filter(|f| lens.may_see(f)) else {
            return Err(self.deny(&who, &[&fid.id], no_field(&fid)));
        };
        let items = gated_items(&who, std::slice::from_ref(&f));
        let version = f.version.to_string();
        if let Some((t, _)) = self.gate(&who, "read", items, &[&f.id.id, &version])? {
            return Ok(Gate::Pending(t));
        }
        let body = self.field_doc(&lens, &who, f)?;
        self.record(Entry::new(Action::Read, who.name()).fields([f.id.id.clone()]))?;
        self.used(&who);
        Ok(Gate::Ready(body))
    }

    /// `GET /context/fields/category/{name}`.
    pub fn get_category(
        &self,
        bearer: Option<&str>,
        name: &str,
    ) -> Answer<Gate<Zeroizing<String>>> {
        let who = self.authenticate(bearer, Class::Read)?;
        self.many(&who, |f| f.id.category == name, Some(name), "category")
    }

    /// `GET /context/context`: every field in scope, grouped by category.
    pub fn context(&self, bearer: Option<&str>, q: &FieldQuery) -> Answer<Gate<Zeroizing<String>>> {
        let who = self.authenticate(bearer, Class::Read)?;
        let max = q.max_tier.unwrap_or(Tier::Critical);
        self.many(&who, |f| f.tier <= max, None, "context")
    }

    /// Seed 004 §9's `request_context`: only the named fields (an id also covers the
    /// fields nested under it: `addresses.current` → `addresses.current.city`), for a
    /// stated purpose. The same view, scope, approvals and audit as `GET /context/context`;
    /// the front end for MCP tools (`context_get`/`context_context`/`request_context`).
    pub fn request_context(
        &self,
        bearer: Option<&str>,
        ids: &[String],
        purpose: Option<&str>,
    ) -> Answer<Gate<Zeroizing<String>>> {
        let who = self.authenticate(bearer, Class::Read)?;
        if ids.is_empty() {
            return Err(Refusal::InvalidRequest("`scope` names no field".into()));
        }
        let wanted = |f: &Field| {
            ids.iter().any(|i| {
                f.id.id == *i
                    || (f.id.id.starts_with(i.as_str()) && f.id.id[i.len()..].starts_with('.'))
            })
        };
        let action = match purpose {
            Some(p) => format!("request: {}", inert(p)),
            None => "request".to_string(),
        };
        self.many(&who, wanted, None, &action)
    }

    fn many(
        &self,
        who: &Who,
        keep: impl Fn(&Field) -> bool,
        category: Option<&str>,
        action: &str,
    ) -> Answer<Gate<Zeroizing<String>>> {
        self.require_mode(who, Access::Read, &[])?;
        let st = self.open_state()?;
        let open = st.as_ref().expect("open");
        if let Some(c) = category {
            if !open.vault.has_category(c) {
                return Err(Refusal::NotFound(format!("no category {}", inert(c))));
            }
            if let Who::Consumer { scope, .. } = who {
                let first =
                    |p: &crate::pattern::Pattern| p.as_str().split('.').next().map(str::to_string);
                if !scope
                    .iter()
                    .any(|p| matches!(first(p).as_deref(), Some(x) if x == "*" || x == c))
                {
                    return Err(self.deny(
                        who,
                        &[],
                        Refusal::ScopeExceeded(format!(
                            "category {c} is outside this token's scope"
                        )),
                    ));
                }
            }
        }
        let lens = self.lens(open, who)?;
        let mut chosen: Vec<&Field> = Vec::new();
        for f in open.vault.fields.values() {
            if keep(f) && lens.may_see(f) {
                chosen.push(f);
            }
        }
        let items = gated_items(who, &chosen);
        let parts: Vec<String> = items
            .iter()
            .map(|i| {
                let v = open.vault.fields.get(&i.id).map_or(0, |f| f.version);
                format!("{}@{v}", i.id)
            })
            .collect();
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        if let Some((t, _)) = self.gate(who, action, items, &refs)? {
            return Ok(Gate::Pending(t));
        }
        let mut groups: std::collections::BTreeMap<&str, Vec<Zeroizing<String>>> =
            Default::default();
        let mut warnings = Vec::new();
        for f in &chosen {
            let value = self.shown(&lens, f)?;
            groups.entry(&f.id.category).or_default().push(
                Obj::new()
                    .str("id", &f.id.id)
                    .str("category", &f.id.category)
                    .str("field_name", &f.id.name)
                    .raw("value", &value)
                    .str("sensitivity", f.tier.as_str())
                    .str("written_by", &f.written_by)
                    .finish(),
            );
            if let Some(w) = provenance_warning(who, f) {
                warnings.push(serde_json::to_string(&w).expect("string"));
            }
        }
        let mut cats = Obj::new();
        for (c, items) in &groups {
            cats = cats.array(c, items);
        }
        let body = match category {
            Some(c) => {
                let items = groups.get(c).map(Vec::as_slice).unwrap_or(&[]);
                Obj::new().str("category", c).array("fields", items)
            }
            None => Obj::new().raw("categories", &cats.finish()),
        };
        let body = if warnings.is_empty() {
            body
        } else {
            body.array("warnings", &warnings)
        }
        .finish();
        self.record(
            Entry::new(Action::Read, who.name()).fields(chosen.iter().map(|f| f.id.id.clone())),
        )?;
        self.used(who);
        Ok(Gate::Ready(body))
    }

    /// `PUT /context/fields/{id}` with `{ value, sensitivity? }`.
    pub fn put_field(
        &self,
        bearer: Option<&str>,
        id: &str,
        value: &serde_json::Value,
        sensitivity: Option<&str>,
    ) -> Answer<Gate<WriteOutcome>> {
        let who = self.authenticate(bearer, Class::Write)?;
        self.require_mode(&who, Access::Write, &[id])?;
        let fid = FieldId::parse(id).map_err(Refusal::invalid)?;
        let value = value_text(value).map_err(Refusal::invalid)?;
        let tier = match sensitivity {
            None => None,
            Some(s) => Some(Tier::parse(s).ok_or_else(|| {
                Refusal::InvalidRequest(
                    "`sensitivity` is public, standard, sensitive or critical".into(),
                )
            })?),
        };
        self.require_scope(&who, &fid)?;
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        let open = st.as_mut().ok_or(Refusal::VaultLocked)?;
        let Some(category) = open.vault.config.categories.get(&fid.category).cloned() else {
            return Err(Refusal::NotFound(format!(
                "no category {} in this vault",
                fid.category
            )));
        };
        let existing = open.vault.fields.get(&fid.id);
        // A field the consumer cannot see and one that does not exist (and that it
        // may not create) answer alike, before anything else about the field is
        // looked at: in a vault the field's name is the secret.
        if let Who::Consumer { .. } = &who {
            let lens = self.lens(open, &who)?;
            let reachable = match existing {
                Some(f) => lens.may_see(f),
                None => lens.may_create(&fid.id, category.default_tier(&fid.name)),
            };
            if !reachable {
                drop(st);
                return Err(self.deny(&who, &[&fid.id], no_field(&fid)));
            }
        }
        let (old_tier, user_only) = match existing {
            Some(f) => (f.tier, f.user_only_write),
            None => (
                category.default_tier(&fid.name),
                category.user_only(&fid.name),
            ),
        };
        if user_only && !matches!(who, Who::User { .. }) {
            drop(st);
            return Err(self.deny(
                &who,
                &[&fid.id],
                Refusal::UserOnlyWrite(format!(
                    "{} is user-only-write: only the user can set it",
                    fid.id
                )),
            ));
        }
        // A tier is the user's decision: a consumer may name the tier a field has
        // (or, for a new field, one at least as strict as the category's), never change it.
        if let (Who::Consumer { .. }, Some(t)) = (&who, tier) {
            let keeps = match existing {
                Some(_) => t == old_tier,
                None => t >= old_tier,
            };
            if !keeps {
                drop(st);
                return Err(self.deny(
                    &who,
                    &[&fid.id],
                    Refusal::UserOnlyWrite(format!(
                        "the sensitivity of {} is the user's decision: leave out `sensitivity`, or ask the user to change it",
                        fid.id
                    )),
                ));
            }
        }
        let new_tier = tier.unwrap_or(old_tier);
        let items = if new_tier.needs_approval() {
            vec![approvals::Item {
                id: fid.id.clone(),
                classification: new_tier.classification(),
                proposed: Some(value.clone()),
            }]
        } else {
            Vec::new()
        };
        let digest = crate::canonical::digest(value.as_bytes());
        if let Some((t, _)) =
            self.gate(&who, "write", items, &[&fid.id, &digest, new_tier.as_str()])?
        {
            return Ok(Gate::Pending(t));
        }
        let created = existing.is_none();
        let f = open
            .vault
            .write(Write {
                id: &fid,
                value,
                tier,
                writer: who.name(),
                now: &now_text(),
            })
            .map_err(Refusal::from_error)?;
        let body = Obj::new()
            .str("id", &f.id.id)
            .str("category", &f.id.category)
            .str("field_name", &f.id.name)
            .str("sensitivity", f.tier.as_str())
            .str("written_by", &f.written_by)
            .str("updated_at", &f.updated_at)
            .num("version", f.version)
            .finish();
        let detail = format!("version {}", f.version);
        drop(st);
        self.record(
            Entry::new(Action::Write, who.name())
                .fields([fid.id.clone()])
                .detail(detail),
        )
        .map_err(|e| Refusal::Unavailable(format!("the field was written, but {}", e.message())))?;
        self.used(&who);
        Ok(Gate::Ready(WriteOutcome { created, body }))
    }

    /// `DELETE /context/fields/{id}`: an agent's delete always waits for approval
    /// (it destroys the value and its history).
    pub fn delete_field(&self, bearer: Option<&str>, id: &str) -> Answer<Gate<Zeroizing<String>>> {
        let who = self.authenticate(bearer, Class::Write)?;
        self.require_mode(&who, Access::Write, &[id])?;
        let fid = FieldId::parse(id).map_err(Refusal::invalid)?;
        self.require_scope(&who, &fid)?;
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        let open = st.as_mut().ok_or(Refusal::VaultLocked)?;
        let Some(f) = open.vault.fields.get(&fid.id) else {
            drop(st);
            return Err(self.deny(&who, &[&fid.id], no_field(&fid)));
        };
        if !self.lens(open, &who)?.may_see(f) {
            drop(st);
            return Err(self.deny(&who, &[&fid.id], no_field(&fid)));
        }
        if f.user_only_write && !matches!(who, Who::User { .. }) {
            drop(st);
            return Err(self.deny(
                &who,
                &[&fid.id],
                Refusal::UserOnlyWrite(format!(
                    "{} is user-only-write: only the user can delete it",
                    fid.id
                )),
            ));
        }
        let items = vec![approvals::Item {
            id: fid.id.clone(),
            classification: f.tier.classification(),
            proposed: None,
        }];
        let version = f.version.to_string();
        if let Some((t, _)) = self.gate(&who, "delete", items, &[&fid.id, &version])? {
            return Ok(Gate::Pending(t));
        }
        open.vault.delete(&fid.id).map_err(Refusal::from_error)?;
        drop(st);
        self.record(Entry::new(Action::Delete, who.name()).fields([fid.id.clone()]))
            .map_err(|e| {
                Refusal::Unavailable(format!("the field was deleted, but {}", e.message()))
            })?;
        self.used(&who);
        Ok(Gate::Ready(
            Obj::new()
                .str("id", &fid.id)
                .raw("deleted", "true")
                .finish(),
        ))
    }
}

/// The one answer for a field a consumer cannot reach: hidden, missing, or not
/// its to create.
fn no_field(fid: &FieldId) -> Refusal {
    Refusal::NotFound(format!("no field {}", fid.id))
}

/// Fields among `fs` that need approval before this caller receives them.
fn gated_items(who: &Who, fs: &[&Field]) -> Vec<approvals::Item> {
    if matches!(who, Who::User { .. }) {
        return Vec::new();
    }
    fs.iter()
        .filter(|f| f.tier.needs_approval())
        .map(|f| approvals::Item {
            id: f.id.id.clone(),
            classification: f.tier.classification(),
            proposed: None,
        })
        .collect()
}

/// Seed 004 §5: a value another agent wrote is flagged to the reader.
fn provenance_warning(who: &Who, f: &Field) -> Option<String> {
    (f.written_by != "user" && f.written_by != who.name()).then(|| {
        format!(
            "{} was written by consumer {}, not by the user",
            f.id.id, f.written_by
        )
    })
}
