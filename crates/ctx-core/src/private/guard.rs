//! What `ctx validate` (and so the pre-commit hook) checks for private collections:
//! the `ctx.private` configuration, and that no member holds plaintext, so private
//! context cannot be committed in clear by accident. Needs no key.

use crate::diag::{Code, Diagnostic};
use crate::load::Repo;

use super::config::{short, PrivateConfig};
use super::{format, strict};

/// Findings for the private collections of a loaded repository.
///
/// Also sweeps plaintext folders left by killed `private edit` runs, and the
/// staged files and interrupted transactions of killed writers, so the hook
/// and CI clean up after them ([`super::scratch::sweep_stale`],
/// [`crate::fs::tidy`]).
pub fn check(repo: &Repo) -> Vec<Diagnostic> {
    super::scratch::sweep_stale();
    crate::fs::tidy(&repo.manifest.root);
    let (cfg, mut out) = PrivateConfig::from_manifest(&repo.manifest);
    for o in &repo.objects {
        let at = |d: Diagnostic| {
            d.file(o.origin.file.clone())
                .line(o.origin.line)
                .id(o.id.clone())
        };
        let collection = o.origin.collection.as_deref().unwrap_or("");
        match (cfg.collection(collection), o.meta.sealed.is_some()) {
            (Some(_), false) => out.push(
                at(Diagnostic::error(
                    Code::SecretDetected,
                    format!("plaintext in private collection `{collection}`: this file must be encrypted before it is committed"),
                ))
                .field("content")
                .expected("an age-encrypted file (extensions.ctx.private.encrypted: true)")
                .actual("plaintext")
                .fix(format!(
                    "run `ctx private encrypt {}`; if plaintext was already committed, it stays in git history: rotate what it holds",
                    o.origin.file
                )),
            ),
            (Some(keys), true) => {
                let doc: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(o.document()).unwrap_or_default();
                let authored: serde_json::Map<String, serde_json::Value> = doc
                    .iter()
                    .filter(|(k, _)| !o.supplied(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                for field in strict::unlisted_clear_fields(&authored, &keys.clear) {
                    out.push(
                        at(Diagnostic::error(
                            Code::SecretDetected,
                            format!("field `{field}` is stored in clear, but private collection `{collection}` does not list it under `clear:`"),
                        ))
                        .field(field.clone())
                        .expected(format!("only governance fields in clear, or `{field}` listed in extensions.ctx.private.collections.{collection}.clear"))
                        .actual("a clear value (not shown)")
                        .fix(format!("run `ctx private rekey --force` to rewrite the header from the encrypted copy, or add `{field}` to the collection's `clear:` list; if it was committed, it stays in git history")),
                    );
                }
                let recorded = format::marker_recipients(&doc);
                let current = keys.keys();
                if recorded != current {
                    let added: Vec<String> = current.iter().filter(|k| !recorded.contains(k)).map(|k| short(k)).collect();
                    let removed: Vec<String> = recorded.iter().filter(|k| !current.contains(k)).map(|k| short(k)).collect();
                    out.push(
                        at(Diagnostic::warning(
                            Code::Stale,
                            format!("encrypted to an outdated recipient list for private collection `{collection}`"),
                        ))
                        .field("extensions.ctx.private.recipients")
                        .expected(format!("{} current recipient(s)", current.len()))
                        .actual(format!("to add: [{}]; to remove: [{}]", added.join(", "), removed.join(", ")))
                        .fix("run `ctx private rekey` with an identity that can decrypt the collection"),
                    );
                }
            }
            (None, true) => out.push(
                at(Diagnostic::warning(
                    Code::ManifestInvalid,
                    format!("encrypted file in `{collection}`, which is not a private collection"),
                ))
                .field("extensions.ctx.private")
                .fix(format!("declare `{collection}` under `extensions.ctx.private.collections` with its recipients, so encrypt, rekey and status manage it")),
            ),
            (None, false) => {}
        }
    }
    out
}
