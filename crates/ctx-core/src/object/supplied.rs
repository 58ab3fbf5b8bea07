//! Which of an object's fields the loader supplied rather than its author.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Keys the loader may supply (derived from the path, or a collection's or the
/// manifest's default). The order is the bit order the parse cache stores; the keys
/// a default may supply are one run of it ([`DEFAULTABLE`]).
pub const SUPPLIABLE: [&str; 12] = [
    "id",
    "type",
    "layer",
    "authority",
    "classification",
    "durability",
    "trust",
    "owner",
    "ttl",
    "sources",
    "canonical_source",
    "content",
];

/// Fields a collection's or the manifest's `defaults` may supply, in the order the
/// loader applies them (which is the order they join an object's document).
pub const DEFAULTABLE: &[&str] = SUPPLIABLE.split_at(9).0.split_at(1).1;

/// A set of [`SUPPLIABLE`] keys, one bit each: every object carries one, and a
/// list of names cost two allocations per object whenever the cache decoded it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Supplied(u16);

impl Supplied {
    fn bit(key: &str) -> Option<u16> {
        SUPPLIABLE.iter().position(|k| *k == key).map(|i| 1 << i)
    }

    /// Record `key` as supplied. Only the loader calls this, with the names above.
    pub fn insert(&mut self, key: &str) {
        let bit = Self::bit(key).unwrap_or_else(|| panic!("`{key}` is not a suppliable key"));
        self.0 |= bit;
    }

    pub fn contains(&self, key: &str) -> bool {
        Self::bit(key).is_some_and(|b| self.0 & b != 0)
    }

    /// The supplied keys, in [`SUPPLIABLE`] order.
    pub fn iter(&self) -> impl Iterator<Item = &'static str> + '_ {
        SUPPLIABLE
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, k)| *k)
    }
}

impl Serialize for Supplied {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.0)
    }
}

impl<'de> Deserialize<'de> for Supplied {
    /// A bit past the table is damage (or another build): refused, never ignored.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Supplied, D::Error> {
        let bits = u16::deserialize(d)?;
        if bits >> SUPPLIABLE.len() != 0 {
            return Err(D::Error::custom("unknown supplied key"));
        }
        Ok(Supplied(bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_unknown_bits_are_refused() {
        let mut s = Supplied::default();
        assert!(!s.contains("id"));
        s.insert("id");
        s.insert("ttl");
        s.insert("id");
        assert!(s.contains("id") && s.contains("ttl") && !s.contains("type"));
        assert!(!s.contains("no-such-key"));
        assert_eq!(s.iter().collect::<Vec<_>>(), ["id", "ttl"]);
        let back: Supplied = postcard::from_bytes(&postcard::to_allocvec(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        let bad = postcard::to_allocvec(&(1u16 << 12)).unwrap();
        assert!(postcard::from_bytes::<Supplied>(&bad).is_err());
    }

    #[test]
    fn defaultable_fields_are_these_in_this_order() {
        // Their order is the order defaults join a document: changing it changes digests.
        assert_eq!(
            DEFAULTABLE,
            [
                "type",
                "layer",
                "authority",
                "classification",
                "durability",
                "trust",
                "owner",
                "ttl"
            ]
        );
    }
}
