//! The exchange policy (`extensions.ctx.exchange`) as `ctx validate` and `ctx doctor`
//! report it: every issue the exchange would refuse the whole policy for, and key
//! references it could never sign with, as `manifest-invalid` errors on the
//! manifest — found when the policy is written, not when a request is refused.

use std::collections::HashSet;

use serde_json::Value;

use super::config::{ExchangeConfig, Issue, KeyPurpose, Place, Seg, EXTENSION};
use crate::diag::{Code, Diagnostic};
use crate::manifest::Manifest;
use crate::schema::PathItem;

const REFUSED: &str = "until it is fixed, the exchange refuses every request \
                       (`ctx request evaluate`, `ctx exchange`, `ctx serve`)";

/// The findings about the manifest's exchange policy (none without one).
pub fn findings(m: &Manifest) -> Vec<Diagnostic> {
    if m.extension(EXTENSION).is_none() {
        return Vec::new();
    }
    let (cfg, issues) = ExchangeConfig::parse(m);
    let mut out: Vec<Diagnostic> = issues.iter().map(|i| finding(m, i, REFUSED)).collect();
    // A key left out for an issue of its own is not reported again where it is used.
    let broken: HashSet<&str> = issues
        .iter()
        .filter_map(|i| match i.place.segments() {
            [Seg::Key(k), Seg::Key(id), ..] if k == "keys" => Some(id.as_str()),
            [Seg::Key(k)] if k == "keys" => Some("*"),
            _ => None,
        })
        .collect();
    let uses = [
        (
            cfg.issuer_key.as_deref(),
            "issuer_key",
            KeyPurpose::Bundle,
            "no bundle can be issued with it",
        ),
        (
            cfg.anchor_key.as_deref(),
            "receipts.anchor_key",
            KeyPurpose::Anchor,
            "the receipt log cannot be opened, so every request that needs receipts is refused",
        ),
    ];
    for (id, member, purpose, consequence) in uses {
        let Some(id) = id.filter(|id| !broken.contains(id) && !broken.contains("*")) else {
            continue;
        };
        let Err(e) = super::state::declared_key(m, &cfg, id, purpose) else {
            continue;
        };
        let mut place = Place::default();
        for part in member.split('.') {
            place = place.key(part);
        }
        let issue = Issue {
            place,
            message: e.message,
            expected: format!(
                "a key declared under `keys` with purpose `{}`, and used for nothing else",
                purpose.as_str()
            ),
            actual: Some(Value::from(id)),
            fix: Some(format!(
                "declare the key under `keys` with `purpose: {}` (`ctx keys generate --id {id}` prints its public half), or name one that is",
                purpose.as_str()
            )),
        };
        out.push(finding(m, &issue, &format!("as it is, {consequence}")));
    }
    out
}

fn finding(m: &Manifest, i: &Issue, consequence: &str) -> Diagnostic {
    let field = i.place.to_string();
    let fix = match &i.fix {
        Some(f) => format!("{f} (see docs/exchange.md); {consequence}"),
        None => format!(
            "write {} at `{field}` (see docs/exchange.md); {consequence}",
            i.expected
        ),
    };
    let mut d = Diagnostic::error(
        Code::ManifestInvalid,
        format!("exchange policy: {}", i.message),
    )
    .file(m.file.clone())
    .field(field)
    .expected(i.expected.clone())
    .fix(fix);
    if let Some(a) = i
        .actual
        .clone()
        .or_else(|| value_at(m, &i.place).map(shown))
    {
        d = d.actual(a);
    }
    let mut path = vec![
        PathItem::Key("extensions".into()),
        PathItem::Key(EXTENSION.into()),
    ];
    path.extend(i.place.segments().iter().map(|s| match s {
        Seg::Key(k) => PathItem::Key(k.clone()),
        Seg::Index(n) => PathItem::Index(*n),
    }));
    if let Some((line, column)) = m.locate(&path) {
        d = d.at(line, column);
    }
    d
}

/// The value written at `place`, if there is one.
fn value_at<'m>(m: &'m Manifest, place: &Place) -> Option<&'m Value> {
    place
        .segments()
        .iter()
        .try_fold(m.extension(EXTENSION)?, |v, s| match s {
            Seg::Key(k) => v.get(k.as_str()),
            Seg::Index(n) => v.get(*n),
        })
}

/// A value as a finding shows it: short, never a whole structure.
fn shown(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > 120 => {
            Value::String(format!("{}…", s.chars().take(120).collect::<String>()))
        }
        Value::Object(_) => Value::String("(a mapping)".into()),
        Value::Array(a) if a.len() > 8 => Value::String(format!("(a list of {})", a.len())),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Severity;
    use crate::signing::SigningKeyPair;

    fn manifest(exchange: &str) -> (tempfile::TempDir, Manifest) {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "opencontext: \"1.0\"\nid: acme\ncontext:\n  mission: ./m.md\nagents:\n  helpdesk:\n    roles: [support]\n\
             roles:\n  support:\n    include: [mission]\nextensions:\n  ctx.exchange:\n{exchange}"
        );
        std::fs::write(dir.path().join("opencontext.yaml"), text).unwrap();
        std::fs::write(dir.path().join("m.md"), "---\ntype: mission\n---\nx\n").unwrap();
        let (m, _) = Manifest::load(&dir.path().join("opencontext.yaml")).unwrap();
        (dir, m)
    }

    fn key(seed: u8) -> String {
        SigningKeyPair::from_seed(&[seed; 32])
            .public_key()
            .to_base64()
    }

    #[test]
    fn every_issue_is_a_finding_and_the_first_is_what_the_exchange_refuses_with() {
        let (_d, m) = manifest(
            "    issuer_key: signer\n    requesters:\n      helpdesk:\n        purpose_codes: [draft.response, made-up]\n\
             \x20       retention_mode: forever\n        max_retention_seconds: 0\n        actoins: [email.send]\n\
             \x20     helpdsk: {}\n",
        );
        let d = findings(&m);
        let fields: Vec<&str> = d.iter().map(|f| f.field.as_deref().unwrap()).collect();
        assert_eq!(
            fields,
            [
                "extensions.ctx.exchange.requesters.helpdesk.actoins",
                "extensions.ctx.exchange.requesters.helpdesk.purpose_codes",
                "extensions.ctx.exchange.requesters.helpdesk.retention_mode",
                "extensions.ctx.exchange.requesters.helpdesk.max_retention_seconds",
                "extensions.ctx.exchange.requesters.helpdsk",
                "extensions.ctx.exchange.issuer_key",
            ],
            "{d:#?}"
        );
        assert!(d.iter().all(|f| f.code == Code::ManifestInvalid
            && f.severity == Severity::Error
            && f.file.as_deref() == Some("opencontext.yaml")));
        // Line and column of the key, expected and actual, a fix.
        let typo = &d[0];
        assert_eq!((typo.line, typo.column), (Some(19), Some(9)));
        assert_eq!(typo.actual, Some(Value::from("actoins")));
        assert!(typo
            .remediation
            .as_deref()
            .unwrap()
            .starts_with("did you mean `actions`?"));
        let retention = &d[2];
        assert_eq!(retention.line, Some(17));
        assert_eq!(
            retention.expected,
            Some(Value::from("`ephemeral` or `single_use`"))
        );
        assert_eq!(retention.actual, Some(Value::from("forever")));
        assert_eq!(d[3].actual, Some(Value::from(0)));
        assert!(d[4]
            .remediation
            .as_deref()
            .unwrap()
            .starts_with("did you mean `helpdesk`?"));
        assert!(d[5].message.contains("not declared"), "{:?}", d[5]);
        assert!(d[5]
            .remediation
            .as_deref()
            .unwrap()
            .contains("no bundle can be issued"));
        // The exchange itself refuses the policy with the first issue.
        let e = ExchangeConfig::from_manifest(&m).unwrap_err();
        assert_eq!(e.code, "INVALID_EXCHANGE_POLICY");
        assert_eq!(
            e.message,
            format!(
                "{}: {}",
                fields[0],
                d[0].message.trim_start_matches("exchange policy: ")
            )
        );
    }

    #[test]
    fn a_sound_policy_has_no_findings() {
        let (_d, m) = manifest(&format!(
            "    issuer_key: b\n    keys:\n      b: {{ ed25519: \"{}\", purpose: bundle }}\n      a: {{ ed25519: \"{}\", purpose: anchor }}\n\
             \x20   receipts: {{ anchor_key: a }}\n    requesters:\n      helpdesk: {{ purpose_codes: [draft.response] }}\n",
            key(1),
            key(2)
        ));
        assert_eq!(findings(&m), Vec::<Diagnostic>::new());
        assert!(ExchangeConfig::from_manifest(&m).is_ok());
    }

    #[test]
    fn key_references_are_checked_against_what_may_sign() {
        let (_d, m) = manifest(&format!(
            "    issuer_key: a\n    keys:\n      a: {{ ed25519: \"{}\", purpose: anchor }}\n      bad: {{ ed25519: \"nope\", purpose: anchor }}\n\
             \x20   receipts: {{ anchor_key: bad }}\n",
            key(1)
        ));
        let d = findings(&m);
        // The broken key is reported once, where it is declared; the issuer names an anchor key.
        assert_eq!(d.len(), 2, "{d:#?}");
        assert_eq!(
            d[0].field.as_deref(),
            Some("extensions.ctx.exchange.keys.bad.ed25519")
        );
        assert_eq!(
            d[1].field.as_deref(),
            Some("extensions.ctx.exchange.issuer_key")
        );
        assert!(
            d[1].message
                .contains("declared for anchor signatures, not bundle"),
            "{:?}",
            d[1]
        );
        assert_eq!(d[1].line, Some(13));
    }

    #[test]
    fn a_policy_that_is_not_a_mapping_is_one_finding() {
        let (_d, m) = manifest("      - a\n");
        let d = findings(&m);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].field.as_deref(), Some("extensions.ctx.exchange"));
        assert_eq!(d[0].expected, Some(Value::from("a mapping")));
        assert_eq!(d[0].line, Some(12));
    }
}
