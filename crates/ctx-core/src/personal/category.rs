//! A category the user names (seed 004 §2: "categories are convention-driven, not
//! enforced"): `PUT /context/fields/hobbies.chess` on a vault without `hobbies`
//! adds it. A category is a private collection like the standard ones, so the
//! manifest gains three entries — the collection, its `ctx.private` keys (the
//! category's derived key, and the recovery groups the other categories have) and
//! its `ctx.personal` defaults. The manifest is edited *textually*: the rest of it
//! stays byte for byte; the edited text is parsed again and must equal the old
//! document plus exactly those entries before it is written.

use serde_json::json;

use crate::error::{Error, Result};
use crate::manifest::Manifest;

use super::config::{valid_segment, PersonalConfig};
use super::{Tier, EXTENSION};

/// The manifest text with category `name` added, checked; `derived` is the
/// category's derived public key.
pub fn manifest_with(
    m: &Manifest,
    cfg: &PersonalConfig,
    name: &str,
    tier: Tier,
    derived: &str,
) -> Result<String> {
    if !valid_segment(name) {
        return Err(Error::Usage(format!(
            "`{}` is not a category name: lowercase letters, digits, `_` and `-`, starting with a letter or digit",
            super::field::inert(name)
        )));
    }
    if m.file.ends_with(".json") {
        return Err(cannot(
            name,
            "the manifest is JSON; add the category by hand",
        ));
    }
    let groups = recovery_groups(m, cfg);
    let glob = format!("./{}/{name}/**", cfg.root);
    let mut private = format!("{name}:\n  recipients: [{derived}]\n");
    if !groups.is_empty() {
        private.push_str(&format!("  groups: [{}]\n", groups.join(", ")));
    }
    let mut text = m.text.clone();
    for (path, entry) in [
        (&["collections"][..], format!("{name}: {glob}\n")),
        (
            &["extensions", EXTENSION, "categories"][..],
            format!("{name}:\n  sensitivity: {tier}\n"),
        ),
        (&["extensions", "ctx.private", "collections"][..], private),
    ] {
        text = insert_child(&text, path, &entry).map_err(|why| cannot(name, &why))?;
    }
    let mut expected = m.raw.clone();
    expected["collections"][name] = json!(glob);
    expected["extensions"][EXTENSION]["categories"][name] = json!({ "sensitivity": tier.as_str() });
    let mut keys = json!({ "recipients": [derived] });
    if !groups.is_empty() {
        keys["groups"] = json!(groups);
    }
    expected["extensions"]["ctx.private"]["collections"][name] = keys;
    let reparsed = crate::yaml::parse(&text)
        .map_err(|e| cannot(name, &format!("the edited manifest does not parse ({e})")))?;
    if reparsed != expected {
        return Err(cannot(
            name,
            "the edited manifest would change more than the new category",
        ));
    }
    Ok(text)
}

fn cannot(name: &str, why: &str) -> Error {
    Error::Invalid(format!(
        "cannot add category `{name}` to the manifest: {why} (docs/personal.md, \"Categories\")"
    ))
}

/// The recipient groups every existing category is also encrypted to (recovery keys).
fn recovery_groups(m: &Manifest, cfg: &PersonalConfig) -> Vec<String> {
    let cols = &m.raw["extensions"]["ctx.private"]["collections"];
    let mut common: Option<Vec<String>> = None;
    for c in cfg.categories.keys() {
        let g: Vec<String> = cols[c]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        common = Some(match common {
            None => g,
            Some(prev) => prev.into_iter().filter(|x| g.contains(x)).collect(),
        });
    }
    common.unwrap_or_default()
}

/// One line: its text without the terminator, indentation, and whether it holds content.
fn lines(text: &str) -> Vec<(&str, usize, bool)> {
    text.split_inclusive('\n')
        .map(|raw| {
            let body = raw.trim_end_matches(['\n', '\r']);
            let t = body.trim_start_matches(' ');
            (
                body,
                body.len() - t.len(),
                !t.is_empty() && !t.starts_with('#'),
            )
        })
        .collect()
}

/// Append `entry` (lines indented from 0) as the last child of the block mapping at
/// `path`; only block style is edited, a flow value or a missing key is refused.
fn insert_child(text: &str, path: &[&str], entry: &str) -> std::result::Result<String, String> {
    let ls = lines(text);
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let (mut from, mut to, mut indent) = (0, ls.len(), 0);
    let mut last = 0;
    for key in path {
        let at = (from..to)
            .find(|&i| {
                let (body, ind, content) = ls[i];
                content && ind == indent && is_key(&body[ind..], key)
            })
            .ok_or_else(|| format!("`{}` is not a block mapping in it", path.join(".")))?;
        let (body, ind, _) = ls[at];
        let rest = body[ind..].split_once(':').map_or("", |(_, r)| r).trim();
        if !(rest.is_empty() || rest.starts_with('#')) {
            return Err(format!(
                "`{key}` is written in flow style; only block style is edited"
            ));
        }
        let children: Vec<usize> = (at + 1..ls.len())
            .take_while(|&i| !ls[i].2 || ls[i].1 > indent)
            .filter(|&i| ls[i].2)
            .collect();
        let Some(&first) = children.first() else {
            return Err(format!("`{key}` is empty"));
        };
        indent = ls[first].1;
        last = *children.last().expect("non-empty");
        (from, to) = (at + 1, last + 1);
    }
    let pad = " ".repeat(indent);
    let add: String = entry.lines().map(|l| format!("{pad}{l}{nl}")).collect();
    let at: usize = text
        .split_inclusive('\n')
        .take(last + 1)
        .map(str::len)
        .sum();
    let mut out = String::with_capacity(text.len() + add.len() + 1);
    out.push_str(&text[..at]);
    if !out.ends_with('\n') {
        out.push_str(nl);
    }
    out.push_str(&add);
    out.push_str(&text[at..]);
    Ok(out)
}

fn is_key(body: &str, key: &str) -> bool {
    [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
        .iter()
        .any(|k| {
            body.strip_prefix(k.as_str())
                .and_then(|r| r.trim_start_matches(' ').strip_prefix(':'))
                .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
        })
}

/// The descriptor a category folder starts with (as `ctx init` writes them).
pub fn descriptor(name: &str, now: &str) -> String {
    let mut s = serde_json::to_string_pretty(&json!({
        "id": name,
        "type": super::field::CATEGORY_TYPE,
        "classification": "public",
        "owner": "user",
        "version": 1,
        "updated": now,
        "title": name,
        "content": format!("A category of your own: {name}"),
    }))
    .expect("JSON");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_goes_last_in_its_block_and_the_rest_stays() {
        let text = "id: x\ncollections:\n  a: ./a/**   # first\n  b: ./b/**\n\nextensions:\n  ctx.personal:\n    categories:\n      a:\n        sensitivity: public\n    # note\nroles: {}\n";
        let out = insert_child(text, &["collections"], "c: ./c/**\n").unwrap();
        assert_eq!(
            out,
            text.replace("  b: ./b/**\n", "  b: ./b/**\n  c: ./c/**\n")
        );
        let out = insert_child(
            text,
            &["extensions", "ctx.personal", "categories"],
            "c:\n  sensitivity: standard\n",
        )
        .unwrap();
        assert!(out.contains(
            "        sensitivity: public\n      c:\n        sensitivity: standard\n    # note\n"
        ));
        assert!(insert_child("collections: {a: x}\n", &["collections"], "b: y\n").is_err());
        assert!(insert_child("id: x\n", &["collections"], "b: y\n").is_err());
    }
}
