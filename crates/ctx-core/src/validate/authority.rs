//! Authority cannot be laundered (§16.3, §19): a default never makes untrusted or
//! observed material canonical or approved, and an object whose declared authority
//! and trust disagree is reported wherever it goes (`validate`, bundles).

use serde_json::{Map, Value};

use crate::diag::{Code, Diagnostic};
use crate::model::{Authority, Trust};
use crate::object::Meta;

/// Material from outside the trust boundary, or observed rather than decided:
/// `trust: untrusted`, or a source of type observation, conversation or inference
/// (or an untrusted source) that nobody marked `trust: verified` and that does not
/// declare itself the origin (`canonical_source: true`: the file is the decided
/// record, and its observed sources are only what it was drawn from).
pub fn untrusted_material(meta: &Meta) -> bool {
    meta.trust == Trust::Untrusted
        || (meta.observed_origin
            && meta.trust != Trust::Verified
            && !meta.declares_canonical_source)
}

/// Why the material is untrusted, for messages.
fn why(meta: &Meta) -> &'static str {
    if meta.trust == Trust::Untrusted {
        "declared `trust: untrusted`"
    } else {
        "sourced from an observation, conversation, inference or untrusted source"
    }
}

/// At load, when `authority` came from a default: refuse a default that would make
/// untrusted or observed material canonical or approved. The object (and its
/// effective document) becomes `observed`; the finding says so.
pub fn refuse_default(
    meta: &mut Meta,
    fields: &mut Map<String, Value>,
    file: &str,
    id: &str,
) -> Option<Diagnostic> {
    if !meta.authority.claims_truth() || !untrusted_material(meta) {
        return None;
    }
    let refused = meta.authority;
    meta.authority = Authority::Observed;
    meta.rare_mut().default_refused = Some(refused);
    fields.insert(
        "authority".into(),
        Value::from(Authority::Observed.as_str()),
    );
    Some(
        Diagnostic::warning(
            Code::UntrustedCanonical,
            format!(
                "the default authority `{refused}` is not applied: the object is {}, and a \
                 default never makes such material {refused}; it resolves as `observed`",
                why(meta)
            ),
        )
        .file(file)
        .id(id)
        .field("authority")
        .expected("an authority declared in the object itself for untrusted or observed material")
        .actual(format!("{refused} (from a default)"))
        .fix(format!(
            "declare `authority: observed` in the object (or, after verifying the content, \
             `trust: verified` and `authority: {refused}`)"
        )),
    )
}

/// When the author declared a truth-claiming authority on untrusted material: the
/// disagreement between authority and trust is reported (a warning, so `--strict`
/// fails). Observed sources alone do not disagree with an author's own decision (a
/// decision taken in a meeting has a `conversation` source); they only stop a
/// *default* from granting the authority (see [`refuse_default`]).
pub fn disagreement(meta: &Meta, file: &str, id: &str) -> Option<Diagnostic> {
    if meta.default_refused.is_some()
        || !meta.authority.claims_truth()
        || meta.trust != Trust::Untrusted
    {
        return None;
    }
    Some(
        Diagnostic::warning(
            Code::UntrustedCanonical,
            format!(
                "{} object is {}: authority and trust disagree",
                meta.authority,
                why(meta)
            ),
        )
        .file(file)
        .id(id)
        .field("trust")
        .expected(format!(
            "trusted or verified content from a decided source for `{}` authority",
            meta.authority
        ))
        .actual(if meta.trust == Trust::Untrusted {
            "untrusted".to_string()
        } else {
            "an observed source".to_string()
        })
        .fix(
            "lower the authority (e.g. observed), or verify the content and set `trust: verified`",
        ),
    )
}
