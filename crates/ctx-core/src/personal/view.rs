//! The authorized view of a vault: which fields a consumer may see at all, and
//! what of a value it receives (redaction). This is the vault's only door to the
//! library's view logic (today [`crate::resolve::authorize`] with the role scope
//! and the redaction rules; the single view function of the library when it exists),
//! so a token can narrow what `ctx resolve` would give the consumer, never widen it.
//!
//! A registered consumer is the manifest agent of the same name when one is
//! declared, else the vault's `consumer_role`; the user's session is `owner_role`.

use crate::manifest::roles::{self, Scope};
use crate::manifest::Manifest;
use crate::model::Redaction;
use crate::object::ContextObject;
use crate::resolve::authorize::{authorize, Principals};
use crate::resolve::{Consumer, ConsumerKind};

use super::config::PersonalConfig;
use super::field::ValueText;

/// One consumer's view.
pub struct Viewer {
    consumer: Consumer,
    scope: Scope,
    rules: Vec<Redaction>,
}

impl Viewer {
    /// The view of a registered consumer.
    pub fn for_consumer(m: &Manifest, c: &PersonalConfig, name: &str) -> Result<Viewer, String> {
        let consumer = if m.agents.contains_key(name) {
            Consumer::from_flags(m, Some(name), &[])?
        } else {
            Consumer {
                kind: ConsumerKind::Agent,
                id: name.to_string(),
                roles: vec![c.consumer_role.clone()],
            }
        };
        Viewer::with(m, consumer)
    }

    /// The view of the vault's owner (the unlocked session).
    pub fn for_owner(m: &Manifest, c: &PersonalConfig) -> Result<Viewer, String> {
        Viewer::with(
            m,
            Consumer {
                kind: ConsumerKind::Role,
                id: c.owner_role.clone(),
                roles: vec![c.owner_role.clone()],
            },
        )
    }

    fn with(m: &Manifest, consumer: Consumer) -> Result<Viewer, String> {
        let scope = roles::scope(m, &consumer.roles)?;
        let rules = m.redact.iter().chain(scope.redact.iter()).cloned().collect();
        Ok(Viewer {
            consumer,
            scope,
            rules,
        })
    }

    /// May this consumer see the object at all (governance only, before any value)?
    pub fn may_see(&self, o: &ContextObject) -> bool {
        authorize(
            o,
            &Principals {
                consumer: &self.consumer.id,
                scope: &self.scope,
            },
        )
        .is_ok()
    }

    /// May this consumer create a field `id` of `tier` (the view it would then have)?
    pub fn may_create(&self, id: &str, tier: super::Tier) -> bool {
        tier.classification() <= self.scope.ceiling
            && self.scope.include.iter().any(|p| p.covers(id))
            && !self.scope.exclude.iter().any(|p| p.covers(id))
    }

    /// The value as this consumer receives it (redaction rules applied to structured values).
    pub fn shown(&self, value: &ValueText) -> ValueText {
        if self.rules.is_empty() || !value.starts_with(['{', '[']) {
            return value.clone();
        }
        let mut v: serde_json::Value = serde_json::from_str(value).unwrap_or(serde_json::Value::Null);
        let rules: Vec<&Redaction> = self.rules.iter().collect();
        crate::resolve::redact::redact(&mut v, &rules);
        zeroize::Zeroizing::new(serde_json::to_string(&v).expect("JSON"))
    }
}
