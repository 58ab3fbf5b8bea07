//! Stage 3: the locally registered trust tuple (provider id + version +
//! instance + key id + public key), optionally scoped to workspaces,
//! agents and users. A result never carries its own key, so only this
//! local registration can make it trusted.
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Binding, Failure, FailureCode, ProviderRef};
use crate::signing::PublicKey;

/// Scope entry that matches any id (the reference test's convention).
pub const ANY: &str = "*";

/// Public keys of published conformance fixtures, whose private seeds are
/// public too: anyone can sign with them. A trust file naming one is refused
/// by these bytes, whether or not it keeps the `fixture_key_only` marker.
pub const KNOWN_FIXTURE_KEYS: [(&str, &str); 2] = [
    (
        "the AtMem delegated-provider v1 fixture key",
        "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=",
    ),
    (
        "ctx's own provider-vectors fixture key",
        "xXDgaTfn3pJCMlunj5WZckv3eIH22wfx9AlNaW4K11I=",
    ),
];

/// A malformed local configuration file (trust store or binding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub what: &'static str,
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(what: &'static str, message: impl Into<String>) -> Self {
        Self {
            what,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.what, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// On-disk form of one registration (the fixture `trust.json` format).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistrationFile {
    provider_id: String,
    provider_version: String,
    provider_instance_id: String,
    key_id: String,
    public_key_base64: String,
    workspace_ids: Vec<String>,
    agent_ids: Vec<String>,
    user_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    fixture_key_only: bool,
}

/// One trusted provider key and the scope it may speak for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub provider: ProviderRef,
    pub key_id: String,
    pub public_key: PublicKey,
    /// Allowed workspace ids; `["*"]` allows any.
    pub workspace_ids: Vec<String>,
    pub agent_ids: Vec<String>,
    pub user_ids: Vec<String>,
    /// Conformance-test material that must never be trusted in production.
    pub fixture_key_only: bool,
}

impl Registration {
    /// A registration allowed for any workspace, agent and user; narrow it
    /// by assigning the scope fields.
    pub fn new(provider: ProviderRef, key_id: impl Into<String>, public_key: PublicKey) -> Self {
        Self {
            provider,
            key_id: key_id.into(),
            public_key,
            workspace_ids: vec![ANY.into()],
            agent_ids: vec![ANY.into()],
            user_ids: vec![ANY.into()],
            fixture_key_only: false,
        }
    }

    /// Narrow the allowed workspaces, agents and users; an empty list keeps "any".
    pub fn restricted_to(
        mut self,
        workspaces: &[String],
        agents: &[String],
        users: &[String],
    ) -> Self {
        for (list, given) in [
            (&mut self.workspace_ids, workspaces),
            (&mut self.agent_ids, agents),
            (&mut self.user_ids, users),
        ] {
            if !given.is_empty() {
                *list = given.to_vec();
            }
        }
        self
    }

    /// Parse one registration object (the `trust.json` format).
    pub fn from_json(value: &Value) -> Result<Self, ConfigError> {
        let file: RegistrationFile = serde_json::from_value(value.clone())
            .map_err(|e| ConfigError::new("trust registration", e.to_string()))?;
        let public_key = PublicKey::from_base64(&file.public_key_base64).map_err(|e| {
            ConfigError::new(
                "trust registration",
                format!("key {:?}: public_key_base64: {e}", file.key_id),
            )
        })?;
        for (name, list) in [
            ("workspace_ids", &file.workspace_ids),
            ("agent_ids", &file.agent_ids),
            ("user_ids", &file.user_ids),
        ] {
            if list.is_empty() {
                return Err(ConfigError::new(
                    "trust registration",
                    format!(
                        "key {:?}: {name}: expected at least one id (\"*\" for any), found []",
                        file.key_id
                    ),
                ));
            }
        }
        Ok(Self {
            provider: ProviderRef {
                id: file.provider_id,
                version: file.provider_version,
                instance_id: file.provider_instance_id,
            },
            key_id: file.key_id,
            public_key,
            workspace_ids: file.workspace_ids,
            agent_ids: file.agent_ids,
            user_ids: file.user_ids,
            fixture_key_only: file.fixture_key_only,
        })
    }

    /// The `trust.json` object for this registration.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(RegistrationFile {
            provider_id: self.provider.id.clone(),
            provider_version: self.provider.version.clone(),
            provider_instance_id: self.provider.instance_id.clone(),
            key_id: self.key_id.clone(),
            public_key_base64: self.public_key.to_base64(),
            workspace_ids: self.workspace_ids.clone(),
            agent_ids: self.agent_ids.clone(),
            user_ids: self.user_ids.clone(),
            fixture_key_only: self.fixture_key_only,
        })
        .expect("plain strings serialise")
    }

    /// Which published fixture this registration's key is, if any: by its
    /// bytes, or by the `fixture_key_only` marker.
    pub fn fixture_key(&self) -> Option<&'static str> {
        let encoded = self.public_key.to_base64();
        KNOWN_FIXTURE_KEYS
            .iter()
            .find(|(_, k)| *k == encoded)
            .map(|(name, _)| *name)
            .or(self
                .fixture_key_only
                .then_some("a key marked fixture_key_only"))
    }

    fn same_tuple(&self, provider: &ProviderRef, key_id: &str) -> bool {
        self.provider == *provider && self.key_id == key_id
    }
}

fn in_scope(list: &[String], id: &str) -> bool {
    list.iter().any(|s| s == ANY || s == id)
}

/// The set of registrations a verifier trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustStore {
    registrations: Vec<Registration>,
}

impl TrustStore {
    /// Trusts nobody: every result fails with `trusted_provider`.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Refuses two registrations for the same provider/version/instance/key
    /// id, which would make the key ambiguous.
    pub fn new(registrations: Vec<Registration>) -> Result<Self, ConfigError> {
        for (i, r) in registrations.iter().enumerate() {
            if registrations[..i]
                .iter()
                .any(|o| o.same_tuple(&r.provider, &r.key_id))
            {
                return Err(ConfigError::new(
                    "trust store",
                    format!(
                        "provider {:?} version {:?} instance {:?} key {:?} is registered twice",
                        r.provider.id, r.provider.version, r.provider.instance_id, r.key_id
                    ),
                ));
            }
        }
        Ok(Self { registrations })
    }

    /// Parse a trust file: one registration object or an array of them.
    /// Fixture keys (a published fixture key's bytes, or the `fixture_key_only`
    /// marker) are refused unless `allow_fixture_keys` (conformance tests only).
    pub fn from_json_slice(bytes: &[u8], allow_fixture_keys: bool) -> Result<Self, ConfigError> {
        let value = crate::canonical::parse_strict(bytes)
            .map_err(|e| ConfigError::new("trust store", e.to_string()))?;
        let items = match &value {
            Value::Array(items) => items.iter().collect::<Vec<_>>(),
            Value::Object(_) => vec![&value],
            _ => {
                return Err(ConfigError::new(
                    "trust store",
                    "expected a registration object or an array of them",
                ));
            }
        };
        let mut regs = Vec::with_capacity(items.len());
        for item in items {
            let r = Registration::from_json(item)?;
            match r.fixture_key() {
                Some(what) if !allow_fixture_keys => {
                    return Err(ConfigError::new(
                        "trust store",
                        format!(
                            "key {:?} is {what} (fixture_key_only): its private seed is public, so it is trusted only in conformance tests (--allow-fixture-keys)",
                            r.key_id
                        ),
                    ));
                }
                _ => {}
            }
            regs.push(r);
        }
        Self::new(regs)
    }

    /// The trust file form (an array of registrations).
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.registrations
                .iter()
                .map(Registration::to_json)
                .collect(),
        )
    }

    pub fn registrations(&self) -> &[Registration] {
        &self.registrations
    }

    /// The registration for this provider tuple and key whose scope covers
    /// the binding's workspace, agent and user.
    pub(crate) fn find(
        &self,
        provider: &ProviderRef,
        key_id: &str,
        binding: &Binding,
    ) -> Result<&Registration, Failure> {
        let Some(reg) = self
            .registrations
            .iter()
            .find(|r| r.same_tuple(provider, key_id))
        else {
            return Err(Failure::new(
                FailureCode::TrustedProvider,
                "/provider",
                "a local registration for this provider id, version, instance_id and signature key_id",
                format!(
                    "unregistered provider {:?} version {:?} instance {:?} key {:?}",
                    provider.id, provider.version, provider.instance_id, key_id
                ),
            ));
        };
        for (field, list, id) in [
            (
                "/binding/workspace_id",
                &reg.workspace_ids,
                &binding.workspace_id,
            ),
            ("/binding/agent_id", &reg.agent_ids, &binding.agent_id),
            ("/binding/user_id", &reg.user_ids, &binding.user_id),
        ] {
            if !in_scope(list, id) {
                return Err(Failure::new(
                    FailureCode::TrustedProvider,
                    field,
                    format!("an id in the registration's scope {list:?}"),
                    format!("{id:?}"),
                ));
            }
        }
        Ok(reg)
    }
}
