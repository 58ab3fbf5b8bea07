//! The vault's single door: which fields a reader may see at all, and what of a
//! value it receives. It is the library's authorized view ([`crate::view::View`],
//! opened through the policy gate [`crate::manifest::roles::require_sound`]) over
//! the vault's governance, narrowed by the reader's token scope. So a token can
//! narrow what `ctx resolve` would give the consumer, never widen it, and a vault
//! whose role set is broken serves nothing.
//!
//! A registered consumer is the manifest agent of the same name when one is
//! declared, else an agent holding the vault's `consumer_role`; the user's session
//! is `owner_role`.

use std::borrow::Cow;

use zeroize::Zeroizing;

use crate::error::Result;
use crate::load::Repo;
use crate::pattern::Pattern;
use crate::resolve::{Consumer, ConsumerKind};
use crate::time::Instant;
use crate::view::{Source, View, Withheld};

use super::config::PersonalConfig;
use super::field::ValueText;
use super::vault::Field;
use super::Tier;

/// Who reads through the view.
#[derive(Debug, Clone, Copy)]
pub enum Reader<'a> {
    /// The user's unlocked session.
    Owner,
    /// A registered consumer, limited to its token's scope patterns.
    Consumer { name: &'a str, scope: &'a [Pattern] },
}

/// One reader's view of one vault, for one request.
pub struct FieldView<'v> {
    view: View<'v>,
    token: Option<&'v [Pattern]>,
}

impl<'v> FieldView<'v> {
    /// Open `reader`'s view of the vault whose governance is `repo` (its manifest).
    /// Refuses while the manifest's role set has errors.
    pub fn open(
        repo: &'v Repo,
        config: &PersonalConfig,
        reader: Reader<'v>,
        at: Instant,
    ) -> Result<FieldView<'v>> {
        let m = &repo.manifest;
        let (consumer, token) = match reader {
            Reader::Owner => (
                Consumer {
                    kind: ConsumerKind::Role,
                    id: config.owner_role.clone(),
                    roles: vec![config.owner_role.clone()],
                },
                None,
            ),
            Reader::Consumer { name, scope } if m.agents.contains_key(name) => {
                (Consumer::from_flags(m, Some(name), &[])?, Some(scope))
            }
            Reader::Consumer { name, scope } => (
                Consumer {
                    kind: ConsumerKind::Agent,
                    id: name.to_string(),
                    roles: vec![config.consumer_role.clone()],
                },
                Some(scope),
            ),
        };
        Ok(FieldView {
            view: View::of(repo, &consumer, at)?,
            token,
        })
    }

    /// Is `id` inside the token's scope (always, for the owner)?
    pub fn in_token_scope(&self, id: &str) -> bool {
        self.token.is_none_or(|s| s.iter().any(|p| p.covers(id)))
    }

    /// May this reader see the field at all (governance and token scope, before any value)?
    pub fn may_see(&self, f: &Field) -> bool {
        self.in_token_scope(&f.id.id) && self.view.authorize_object(&f.object).is_ok()
    }

    /// May this reader create a field `id` of `tier` (the view it would then have)?
    /// Only a reader whose ceiling admits every tier may create: below it, a field the
    /// user raised above the ceiling would be hidden yet refuse a create that a missing
    /// one allows, and the difference would tell the reader that the field exists.
    pub fn may_create(&self, id: &str, tier: Tier) -> bool {
        let Some(s) = self.view.scope() else {
            return false;
        };
        self.in_token_scope(id)
            && s.ceiling == Tier::Critical.classification()
            && tier.classification() <= s.ceiling
            && s.include.iter().any(|p| p.covers(id))
            && !s.exclude.iter().any(|p| p.covers(id))
    }

    /// The value as this reader receives it: only for a field it may see, with the
    /// manifest's, its roles' and the field's own redaction rules applied.
    pub fn shown(&self, f: &Field) -> std::result::Result<ValueText, Withheld> {
        if !self.in_token_scope(&f.id.id) {
            return Err(Withheld::policy("outside the token's scope"));
        }
        self.view
            .authorize_object(&f.object)
            .map_err(Withheld::denied)?;
        // A string value is prose: no redaction rule matches inside it.
        if !f.value.starts_with(['{', '[']) {
            return Ok(f.value.clone());
        }
        let value: serde_json::Value = serde_json::from_str(&f.value)
            .map_err(|_| Withheld::policy("its structured value cannot be parsed"))?;
        let own = f.object.field("redact");
        let shown = self
            .view
            .source_content(own.as_ref(), Source::Inline(Some(&value)))?;
        match shown.content.map(Cow::into_owned) {
            Some(v) => Ok(Zeroizing::new(v.to_string())),
            None => Err(Withheld::policy("its value is withheld by redaction")),
        }
    }
}
