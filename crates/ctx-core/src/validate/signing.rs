//! Shape checks for signing-related data in the repository: decision
//! records' bundle references (id *and* digest, so the decision can be
//! checked later with `ctx verify --decisions`) and the manifest's
//! `ctx.keys` trust list.
use serde_json::Value;

use crate::diag::{Code, Diagnostic};
use crate::load::Repo;

fn is_bundle_id(s: &str) -> bool {
    s.strip_prefix("ocb_").is_some_and(|r| {
        !r.is_empty()
            && r.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    })
}

fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

pub fn check(repo: &Repo, out: &mut Vec<Diagnostic>) {
    for o in repo.objects.iter().filter(|o| o.kind() == "decision") {
        let Some(b) = o.field("bundle") else { continue };
        let at = |d: Diagnostic| {
            d.file(o.origin.file.clone())
                .line(o.origin.line)
                .id(o.id.clone())
        };
        let Some(map) = b.as_object() else {
            out.push(at(Diagnostic::error(
                Code::SchemaInvalid,
                "`bundle` must be a mapping with bundle_id and digest",
            )
            .field("bundle")
            .expected("{ bundle_id: ocb_…, digest: sha256:<64 hex> }")
            .actual(b.clone())
            .fix("cite the bundle the decision was made from by id and digest")));
            continue;
        };
        for (field, ok, expected) in [
            (
                "bundle_id",
                is_bundle_id as fn(&str) -> bool,
                "ocb_ followed by [a-z0-9_-]",
            ),
            (
                "digest",
                is_digest,
                "sha256: followed by 64 lowercase hex digits",
            ),
        ] {
            match map.get(field) {
                Some(Value::String(s)) if ok(s) => {}
                Some(v) => out.push(at(Diagnostic::error(Code::SchemaInvalid, format!("`bundle.{field}` is malformed"))
                    .field(format!("bundle.{field}"))
                    .expected(expected)
                    .actual(v.clone())
                    .fix("copy bundle_id and digest from the bundle (or its receipt) exactly"))),
                None => out.push(at(Diagnostic::warning(Code::BrokenReference, format!("the decision cites a bundle without `bundle.{field}`, so it cannot be verified"))
                    .field(format!("bundle.{field}"))
                    .expected(expected)
                    .actual("nothing")
                    .fix("record both bundle_id and digest of the bundle the decision was made from"))),
            }
        }
    }
    let m = &repo.manifest;
    let (_, errors) = crate::keys::declared(m);
    for e in errors {
        let mut d = Diagnostic::error(Code::ManifestInvalid, e)
            .file(m.file.clone())
            .field(format!("extensions.{}", crate::keys::EXTENSION))
            .expected("{ <key id>: { ed25519: <base64 of a 32-byte Ed25519 public key> } }")
            .fix("declare keys with `ctx keys generate --id <name> --declare`");
        let path = [
            crate::schema::PathItem::Key("extensions".into()),
            crate::schema::PathItem::Key(crate::keys::EXTENSION.into()),
        ];
        if let Some((l, c)) = m.locate(&path) {
            d = d.at(l, c);
        }
        out.push(d);
    }
}
