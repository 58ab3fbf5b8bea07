//! Personal context (seed 004): a repository that is one person's encrypted vault
//! of fields — `identity.full_name`, `addresses.current.city` — which agents reach
//! through scoped, expiring tokens, with sensitivity tiers, approvals and an
//! encrypted audit trail (docs/personal.md).
//!
//! A personal repository stays an ordinary OpenContext repository: each standard
//! category is a private collection ([`crate::private`]), each field an object whose
//! content is the value and whose classification is its tier. What is new here:
//!
//! - [`config`]: `extensions.ctx.personal` (vault id, key derivation parameters,
//!   categories and their default tiers, derived public keys).
//! - [`keys`]: the key chain — Argon2id(password, secret key) → context key → HKDF
//!   per category → that category's age X25519 identity — and the secret key file.
//! - [`template`]: the files `ctx init --template personal` writes.
//! - [`category`]: a category the user names, added to the manifest.
//! - [`document`]: the shape of a document (a field of `documents`).
//! - [`field`]: field ids, their files, and the plaintext document of one field.
//! - [`vault`]: an unlocked vault — every field decrypted in memory — and its writes.
//! - [`tokens`], [`limits`], [`state`]: session and service tokens, registered
//!   consumers, rate limits, and their encrypted persistence.
//! - [`audit`]: the sealed, hash-chained audit log.
//! - [`archive`]: export and import.
//! - [`upgrade`]: the explicit upgrade of a vault from before authentication.
//! - [`integrity`], [`ledger`]: every file authenticated under a key the password
//!   and secret key give; the tagged index of generations, shared by every writer.
//! - [`holder`]: the one-server-per-vault lock and who holds it.
//! - [`view`]: the one place a field's visibility to a consumer is decided.
//! - [`service`]: the operations a front end (`ctx serve`) calls.

pub mod archive;
pub mod audit;
pub mod category;
pub mod config;
pub mod document;
pub mod field;
pub mod holder;
pub mod integrity;
pub mod json;
pub mod keys;
pub mod ledger;
pub mod limits;
pub mod service;
pub mod state;
pub mod template;
pub mod tokens;
pub mod upgrade;
pub mod vault;
pub mod view;

use crate::model::Classification;

/// The namespaced manifest extension (and the per-field extension in each plaintext).
pub const EXTENSION: &str = "ctx.personal";

/// The protocol version reported as `context_version` (seed 004's draft).
pub const CONTEXT_VERSION: &str = "0.1.0";

/// Seed 004's sensitivity tiers, one-to-one onto OpenContext classification:
/// public ↔ public, standard ↔ internal, sensitive ↔ confidential, critical ↔ restricted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Public,
    Standard,
    Sensitive,
    Critical,
}

impl Tier {
    pub const ALL: [Tier; 4] = [
        Tier::Public,
        Tier::Standard,
        Tier::Sensitive,
        Tier::Critical,
    ];

    pub fn of(c: Classification) -> Tier {
        match c {
            Classification::Public => Tier::Public,
            Classification::Internal => Tier::Standard,
            Classification::Confidential => Tier::Sensitive,
            Classification::Restricted => Tier::Critical,
        }
    }

    pub fn classification(self) -> Classification {
        match self {
            Tier::Public => Classification::Public,
            Tier::Standard => Classification::Internal,
            Tier::Sensitive => Classification::Confidential,
            Tier::Critical => Classification::Restricted,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Public => "public",
            Tier::Standard => "standard",
            Tier::Sensitive => "sensitive",
            Tier::Critical => "critical",
        }
    }

    pub fn parse(s: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Sensitive and critical fields leave (or change) only with the user's approval.
    pub fn needs_approval(self) -> bool {
        self >= Tier::Sensitive
    }

    /// Critical fields also need a second factor (the field id retyped, or the password).
    pub fn needs_confirmation(self) -> bool {
        self == Tier::Critical
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One of seed 004's standard categories, with the defaults `ctx init` writes.
pub struct StandardCategory {
    pub name: &'static str,
    pub description: &'static str,
    pub tier: Tier,
    /// Fields whose tier differs from the category's (seed 004 §4's examples).
    pub fields: &'static [(&'static str, Tier)],
    /// Fields no agent may write (seed 004 §4: SSN/tax id, bank routing and account numbers).
    pub user_only_write: &'static [&'static str],
}

/// Seed 004 §2's ten standard categories.
pub const STANDARD_CATEGORIES: [StandardCategory; 10] = [
    StandardCategory {
        name: "identity",
        description: "Legal and personal identity: full_name, dob, nationality, citizenships, passport_number, tax_id",
        tier: Tier::Standard,
        fields: &[
            ("preferred_name", Tier::Public),
            ("dob", Tier::Sensitive),
            ("passport_number", Tier::Sensitive),
            ("ssn", Tier::Critical),
            ("tax_id", Tier::Critical),
        ],
        user_only_write: &["ssn", "tax_id"],
    },
    StandardCategory {
        name: "documents",
        description: "Documents with their metadata: passport, lease, tax_return, pay_stub (type, issue_date, expiry_date)",
        tier: Tier::Sensitive,
        fields: &[],
        user_only_write: &[],
    },
    StandardCategory {
        name: "relationships",
        description: "People in your life: partner, dependents, parents, siblings (name, relationship, proximity)",
        tier: Tier::Standard,
        fields: &[],
        user_only_write: &[],
    },
    StandardCategory {
        name: "financial",
        description: "Financial information: bank accounts, income range, insurance policies, tax filing status",
        tier: Tier::Sensitive,
        fields: &[
            ("bank_routing", Tier::Critical),
            ("bank_account_number", Tier::Critical),
        ],
        user_only_write: &["bank_routing", "bank_account_number"],
    },
    StandardCategory {
        name: "medical",
        description: "Health information: allergies, medications, blood type, primary care provider",
        tier: Tier::Critical,
        fields: &[],
        user_only_write: &[],
    },
    StandardCategory {
        name: "addresses",
        description: "Current and historical addresses: current (street, city, state, postal, country), history",
        tier: Tier::Standard,
        fields: &[],
        user_only_write: &[],
    },
    StandardCategory {
        name: "employment",
        description: "Work history: company, title, start_date, end_date, location",
        tier: Tier::Standard,
        fields: &[],
        user_only_write: &[],
    },
    StandardCategory {
        name: "education",
        description: "Academic history: institution, degree, graduation_date, licenses, certifications",
        tier: Tier::Standard,
        fields: &[],
        user_only_write: &[],
    },
    StandardCategory {
        name: "life_context",
        description: "Life-scale awareness: birth_year, expected_lifespan, chapters, finite_experiences",
        tier: Tier::Standard,
        fields: &[],
        user_only_write: &[],
    },
    StandardCategory {
        name: "preferences",
        description: "How you think and communicate: communication_style, values, mental_models, timezone",
        tier: Tier::Public,
        fields: &[],
        user_only_write: &[],
    },
];

/// Is this manifest a personal repository?
pub fn is_personal(m: &crate::manifest::Manifest) -> bool {
    m.extensions.contains_key(EXTENSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_map_one_to_one_onto_classification() {
        for c in Classification::ALL {
            assert_eq!(Tier::of(*c).classification(), *c);
        }
        for t in Tier::ALL {
            assert_eq!(Tier::parse(t.as_str()), Some(t));
        }
        assert!(!Tier::Standard.needs_approval() && Tier::Sensitive.needs_approval());
        assert!(Tier::Critical.needs_confirmation() && !Tier::Sensitive.needs_confirmation());
    }
}
