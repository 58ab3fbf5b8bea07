//! Field reads: list, get, category, context. Every value leaves through the
//! consumer's view and the token's scope; sensitive and critical fields wait for the
//! user's approval. Writes (put, delete) are in `writes`.

use zeroize::Zeroizing;

use crate::approvals::{self, Redeemed};
use crate::personal::audit::{Action, Entry};
use crate::personal::field::{inert, FieldId, ValueText};
use crate::personal::json::Obj;
use crate::personal::vault::Field;
use crate::personal::view::{FieldView, Reader};
use crate::personal::{Tier, CONTEXT_VERSION};

use super::{lock, now, Answer, Class, Gate, Open, Refusal, Service, Ticket, Who};

/// What a field request does with a field, for the token-mode check.
#[derive(Clone, Copy)]
pub(super) enum Access {
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
    pub(super) fn lens<'a>(&self, open: &'a Open, who: &'a Who) -> Answer<FieldView<'a>> {
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
    pub(super) fn require_mode(&self, who: &Who, access: Access, ids: &[&str]) -> Answer<()> {
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
    pub(super) fn require_scope(&self, who: &Who, fid: &FieldId) -> Answer<()> {
        if who.in_scope(&fid.id) {
            return Ok(());
        }
        Err(self.deny(
            who,
            &[&fid.id],
            Refusal::ScopeExceeded(format!("{} is outside this token's scope", fid.id)),
        ))
    }

    pub(super) fn deny(&self, who: &Who, ids: &[&str], r: Refusal) -> Refusal {
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
    pub(super) fn gate(
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

    pub(super) fn open_state(&self) -> Answer<std::sync::RwLockReadGuard<'_, Option<Box<Open>>>> {
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        if st.is_none() {
            return Err(Refusal::VaultLocked);
        }
        Ok(st)
    }

    /// `GET /context/fields`: metadata of every field the caller may see; no values.
    pub fn list_fields(&self, bearer: Option<&str>) -> Answer<Zeroizing<String>> {
        self.metadata(bearer, None)
    }

    /// The metadata of one category's fields the caller may see (ids, tiers,
    /// writers; no values): what exists, for discovery (seed 004 §9's resources).
    pub fn list_category(&self, bearer: Option<&str>, name: &str) -> Answer<Zeroizing<String>> {
        self.metadata(bearer, Some(name))
    }

    fn metadata(&self, bearer: Option<&str>, category: Option<&str>) -> Answer<Zeroizing<String>> {
        let who = self.authenticate(bearer, Class::Read)?;
        let st = self.open_state()?;
        let open = st.as_ref().expect("open");
        if let Some(c) = category.filter(|c| !open.vault.has_category(c)) {
            return Err(Refusal::NotFound(format!("no category {}", inert(c))));
        }
        let lens = self.lens(open, &who)?;
        let mut items = Vec::new();
        for f in open.vault.fields.values() {
            if !lens.may_see(f) || category.is_some_and(|c| f.id.category != c) {
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
        let out = match category {
            Some(c) => Obj::new().str("category", c),
            None => Obj::new().str("context_version", CONTEXT_VERSION),
        }
        .array("fields", &items);
        // The owner also sees what unlock refused: files and reasons, never a value.
        if !matches!(who, Who::User { .. }) {
            return Ok(out.finish());
        }
        let problems: Vec<Zeroizing<String>> = open
            .vault
            .problems
            .iter()
            .chain(&open.problems)
            .map(|p| {
                Obj::new()
                    .str("file", &p.file)
                    .opt_str("field", p.field.as_deref())
                    .str("error", &p.error)
                    .str("fix", &p.fix)
                    .finish()
            })
            .collect();
        Ok(out.array("problems", &problems).finish())
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
        self.many(
            &who,
            |f| f.id.category == name,
            Some(name),
            "category",
            false,
        )
    }

    /// `GET /context/context`: every field in scope, grouped by category.
    pub fn context(&self, bearer: Option<&str>, q: &FieldQuery) -> Answer<Gate<Zeroizing<String>>> {
        let who = self.authenticate(bearer, Class::Read)?;
        let max = q.max_tier.unwrap_or(Tier::Critical);
        self.many(&who, |f| f.tier <= max, None, "context", false)
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
        self.request_fields(bearer, ids, purpose, false)
    }

    /// [`Service::request_context`] after the user declined its approval: the fields
    /// that need none (public, standard) are returned, and those that do are listed
    /// under `withheld` (id and tier, no value). Nothing is asked.
    pub fn request_context_declined(
        &self,
        bearer: Option<&str>,
        ids: &[String],
        purpose: Option<&str>,
    ) -> Answer<Zeroizing<String>> {
        match self.request_fields(bearer, ids, purpose, true)? {
            Gate::Ready(body) => Ok(body),
            Gate::Pending(_) => Err(Refusal::Unavailable(
                "internal: a request without gated fields asked for approval".into(),
            )),
        }
    }

    fn request_fields(
        &self,
        bearer: Option<&str>,
        ids: &[String],
        purpose: Option<&str>,
        withhold_gated: bool,
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
        self.many(&who, wanted, None, &action, withhold_gated)
    }

    fn many(
        &self,
        who: &Who,
        keep: impl Fn(&Field) -> bool,
        category: Option<&str>,
        action: &str,
        withhold_gated: bool,
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
        let mut withheld: Vec<Zeroizing<String>> = Vec::new();
        if withhold_gated {
            let gated: std::collections::BTreeSet<String> = gated_items(who, &chosen)
                .into_iter()
                .map(|i| i.id)
                .collect();
            chosen.retain(|f| {
                let keep = !gated.contains(&f.id.id);
                if !keep {
                    withheld.push(
                        Obj::new()
                            .str("id", &f.id.id)
                            .str("sensitivity", f.tier.as_str())
                            .str("reason", "approval_denied")
                            .finish(),
                    );
                }
                keep
            });
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
        };
        let body = if withhold_gated {
            body.array("withheld", &withheld)
        } else {
            body
        }
        .finish();
        self.record(
            Entry::new(Action::Read, who.name()).fields(chosen.iter().map(|f| f.id.id.clone())),
        )?;
        self.used(who);
        Ok(Gate::Ready(body))
    }
}

/// The one answer for a field a consumer cannot reach: hidden, missing, or not
/// its to create.
pub(super) fn no_field(fid: &FieldId) -> Refusal {
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
