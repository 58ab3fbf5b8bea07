//! Small closed vocabularies of OpenContext, parsed once into enums.

use serde::{Deserialize, Serialize};

macro_rules! vocab {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum $name { $(#[serde(rename = $text)] $variant),* }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }

            pub fn parse(s: &str) -> Option<$name> {
                match s { $($text => Some($name::$variant),)* _ => None }
            }

            /// The allowed spellings, for "expected" in diagnostics.
            pub fn names() -> Vec<&'static str> {
                vec![$($text),*]
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocab!(
    /// Declared truth level; the default precedence is declaration order.
    Authority {
        Canonical => "canonical",
        Approved => "approved",
        Reference => "reference",
        Observed => "observed",
        Inferred => "inferred",
        Historical => "historical",
    }
);

impl Authority {
    /// Canonical and approved claim truth: only an author grants them (a default
    /// never does, §16.3), a sign-off covers them, and reaching one is a promotion.
    pub fn claims_truth(self) -> bool {
        matches!(self, Authority::Canonical | Authority::Approved)
    }
}

vocab!(
    /// Sensitivity band, least to most sensitive (the derive order is the ceiling order).
    Classification {
        Public => "public",
        Internal => "internal",
        Confidential => "confidential",
        Restricted => "restricted",
    }
);

vocab!(
    Trust {
        Trusted => "trusted",
        Verified => "verified",
        Untrusted => "untrusted",
    }
);

vocab!(
    Layer {
        L0 => "L0",
        L1 => "L1",
        L2 => "L2",
        L3 => "L3",
        L4 => "L4",
        L5 => "L5",
    }
);

vocab!(
    /// Approval state declared on an object.
    Status {
        Draft => "draft",
        Pending => "pending",
        Approved => "approved",
        Rejected => "rejected",
        Retired => "retired",
    }
);

vocab!(
    /// Lifecycle state computed at an instant; never stored on the object.
    Lifecycle {
        Future => "future",
        Current => "current",
        Stale => "stale",
        Expired => "expired",
        Superseded => "superseded",
    }
);

vocab!(
    RedactionMode {
        Remove => "remove",
        Mask => "mask",
        Hash => "hash",
    }
);

/// A structured redaction rule (`path` uses dots, `[]`/`[*]` for every array element, `[N]` for one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    pub path: String,
    #[serde(default = "default_mode")]
    pub mode: RedactionMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn default_mode() -> RedactionMode {
    RedactionMode::Remove
}

/// `id` or `id@version`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectRef {
    pub id: String,
    pub version: Option<u64>,
}

impl ObjectRef {
    pub fn parse(s: &str) -> ObjectRef {
        match s.rsplit_once('@') {
            Some((id, v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => ObjectRef {
                id: id.to_string(),
                version: v.parse().ok(),
            },
            _ => ObjectRef {
                id: s.to_string(),
                version: None,
            },
        }
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.version {
            Some(v) => write!(f, "{}@{}", self.id, v),
            None => f.write_str(&self.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_order() {
        assert!(Classification::Public < Classification::Internal);
        assert!(Classification::Confidential < Classification::Restricted);
    }

    #[test]
    fn object_refs() {
        assert_eq!(
            ObjectRef::parse("pricing.enterprise@1"),
            ObjectRef {
                id: "pricing.enterprise".into(),
                version: Some(1)
            }
        );
        assert_eq!(ObjectRef::parse("a.b").version, None);
        assert_eq!(ObjectRef::parse("a@x").id, "a@x");
    }
}
