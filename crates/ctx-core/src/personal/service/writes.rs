//! Field writes: put and delete. A consumer's write answers alike for a field it
//! cannot see and one that does not exist, never changes a tier, and waits for the
//! user's approval on sensitive and critical fields (every agent delete waits).

use crate::approvals;
use crate::personal::audit::{Action, Entry};
use crate::personal::field::{value_text, FieldId};
use crate::personal::json::Obj;
use crate::personal::vault::Write;
use crate::personal::Tier;

use super::fields::{no_field, Access};
use super::{now_text, Answer, Class, Gate, Refusal, Service, Who, WriteOutcome};
use zeroize::Zeroizing;

impl Service {
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
        if crate::personal::document::is_document(&fid.category, &fid.name) {
            crate::personal::document::check(value).map_err(Refusal::invalid)?;
        }
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
        if !open.vault.config.categories.contains_key(&fid.category) {
            // Seed 004 §2: any category is valid. The user's write adds it; an
            // agent's answers as for any field it may not create (governance is
            // the user's, and the answer must not tell categories from fields).
            if !matches!(who, Who::User { .. }) {
                drop(st);
                return Err(self.deny(&who, &[&fid.id], no_field(&fid)));
            }
            let now = now_text();
            open.vault
                .add_category(&fid.category, Tier::Standard, &now)
                .map_err(Refusal::from_error)?;
            drop(st);
            self.record(
                Entry::new(Action::Write, "user")
                    .detail(format!("added category {} to the manifest", fid.category)),
            )?;
            st = self.state.write().unwrap_or_else(|p| p.into_inner());
        }
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
        let previous = open
            .vault
            .sealed_previous(&fid.id)
            .map_err(Refusal::from_error)?;
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
                .detail(detail)
                .previous(previous),
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
        if let (Who::User { .. }, false) = (&who, open.vault.fields.contains_key(&fid.id)) {
            // The user's way out of a file unlock refused: remove it, end the report.
            if open.vault.discard(&fid.id).map_err(Refusal::from_error)? {
                drop(st);
                self.record(
                    Entry::new(Action::Delete, who.name())
                        .fields([fid.id.clone()])
                        .detail("the refused file was removed"),
                )?;
                return Ok(Gate::Ready(
                    Obj::new()
                        .str("id", &fid.id)
                        .raw("deleted", "true")
                        .finish(),
                ));
            }
        }
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
        let previous = open
            .vault
            .sealed_previous(&fid.id)
            .map_err(Refusal::from_error)?;
        open.vault.delete(&fid.id).map_err(Refusal::from_error)?;
        drop(st);
        self.record(
            Entry::new(Action::Delete, who.name())
                .fields([fid.id.clone()])
                .previous(previous),
        )
        .map_err(|e| Refusal::Unavailable(format!("the field was deleted, but {}", e.message())))?;
        self.used(&who);
        Ok(Gate::Ready(
            Obj::new()
                .str("id", &fid.id)
                .raw("deleted", "true")
                .finish(),
        ))
    }
}
