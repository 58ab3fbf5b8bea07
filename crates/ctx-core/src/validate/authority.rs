//! Authority cannot be laundered (§16.3, §19): a default never makes untrusted or
//! observed material canonical or approved, and an object whose declared authority
//! and trust disagree is reported wherever it goes (`validate`, bundles).

use serde_json::{Map, Value};

use crate::diag::{Code, Diagnostic};
use crate::model::{Authority, Trust};
use crate::object::Meta;

/// Authority levels that claim truth: only an author may grant them.
pub fn claims_truth(a: Authority) -> bool {
    matches!(a, Authority::Canonical | Authority::Approved)
}

/// Material from outside the trust boundary, or observed rather than decided:
/// `trust: untrusted`, or a source of type observation, conversation or inference
/// (or an untrusted source) that nobody marked `trust: verified`.
pub fn untrusted_material(meta: &Meta) -> bool {
    meta.trust == Trust::Untrusted || (meta.observed_origin && meta.trust != Trust::Verified)
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
    if !claims_truth(meta.authority) || !untrusted_material(meta) {
        return None;
    }
    let refused = meta.authority;
    meta.authority = Authority::Observed;
    meta.default_refused = Some(refused);
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

/// When the author declared a truth-claiming authority on untrusted or observed
/// material: the disagreement is reported (a warning, so `--strict` fails).
pub fn disagreement(meta: &Meta, file: &str, id: &str) -> Option<Diagnostic> {
    if meta.default_refused.is_some() || !claims_truth(meta.authority) || !untrusted_material(meta)
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
