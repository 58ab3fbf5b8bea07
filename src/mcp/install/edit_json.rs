//! Our entry merged into a JSON (or JSONC) host file through a concrete syntax
//! tree: every byte outside the entry we add or replace stays as the user wrote it
//! (comments, trailing commas, key order, spacing). The file is parsed with the
//! host's own rules, so a file the host could not read is refused, never rewritten.

use std::path::Path;

use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

use ctx_core::error::{Error, Result};

use super::hosts::Format;
use super::{Edited, Outcome};

/// The syntax `format` allows, and nothing more (no JSON5 extensions).
fn options(format: Format) -> ParseOptions {
    ParseOptions {
        allow_comments: format != Format::Json,
        allow_trailing_commas: format == Format::Jsonc,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

fn refused(file: &Path, why: String) -> Error {
    Error::InvalidHint {
        message: format!("{}: {why}; nothing was written", file.display()),
        help: "fix the file (or move it away) and run again".into(),
    }
}

/// `existing` (the file's text, `None` when there is none) with `entry` under
/// `servers_key`.`name`; `fresh` is the whole document for a new file.
pub fn merge(
    existing: Option<&str>,
    format: Format,
    servers_key: &str,
    name: &str,
    entry: &Value,
    fresh: &Value,
    file: &Path,
) -> Result<Edited> {
    let Some(text) = existing.filter(|t| !t.trim().is_empty()) else {
        let mut text = serde_json::to_string_pretty(fresh).expect("a JSON value");
        text.push('\n');
        return Ok(Edited {
            text,
            outcome: Outcome::Added,
        });
    };
    let opts = options(format);
    // The syntax check first: the CST parser keeps comments without asking whether
    // they are allowed (jsonc-parser 0.34), the plain parser enforces every option.
    let parsed = jsonc_parser::parse_to_ast(text, &Default::default(), &opts)
        .and_then(|_| CstRootNode::parse(text, &opts));
    let root = parsed.map_err(|e| {
        let what = match format {
            Format::Json => "JSON",
            Format::JsonComments => "JSON (comments allowed)",
            _ => "JSONC",
        };
        refused(
            file,
            format!(
                "not valid {what} at line {}, column {}: {}",
                e.line_display(),
                e.column_display(),
                e.kind()
            ),
        )
    })?;
    let doc = match root.value() {
        // Only comments: the object goes after them.
        None => root.object_value_or_set(),
        Some(v) => v
            .as_object()
            .ok_or_else(|| refused(file, "the top level is not a JSON object".into()))?,
    };
    once(&doc, servers_key, file)?;
    let outcome = match doc.get(servers_key) {
        None => {
            doc.append(servers_key, input(&serde_json::json!({ name: entry })));
            Outcome::Added
        }
        Some(prop) => {
            let servers = prop
                .value()
                .and_then(|v| v.as_object())
                .ok_or_else(|| refused(file, format!("`{servers_key}` is not an object")))?;
            once(&servers, name, file)?;
            match servers.get(name) {
                None => {
                    servers.append(name, input(entry));
                    Outcome::Added
                }
                Some(p) if p.value().and_then(|v| v.to_serde_value()).as_ref() == Some(entry) => {
                    return Ok(Edited {
                        text: text.to_string(),
                        outcome: Outcome::Unchanged,
                    })
                }
                Some(p) => {
                    p.set_value(input(entry));
                    Outcome::Replaces
                }
            }
        }
    };
    Ok(Edited {
        text: root.to_string(),
        outcome,
    })
}

/// A key given twice is ambiguous (hosts differ on which one wins): refuse it.
fn once(obj: &CstObject, key: &str, file: &Path) -> Result<()> {
    let n = obj
        .properties()
        .iter()
        .filter(|p| p.decoded_name().as_deref() == Some(key))
        .count();
    if n > 1 {
        return Err(refused(file, format!("`{key}` is given {n} times")));
    }
    Ok(())
}

/// A JSON value as the tree's input, keys in their order.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Value {
        json!({ "command": "ctx", "args": ["mcp", "--agent", "a"] })
    }

    fn run(text: &str, format: Format) -> Result<Edited> {
        let fresh = json!({ "mcpServers": { "ctx-shop": entry() } });
        merge(
            Some(text),
            format,
            "mcpServers",
            "ctx-shop",
            &entry(),
            &fresh,
            Path::new("f.json"),
        )
    }

    #[test]
    fn comments_trailing_commas_and_spacing_survive_the_merge() {
        let text = "// mine\n{\n  \"theme\": \"dark\", // keep\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"},\n  },\n}\n";
        let out = run(text, Format::Jsonc).unwrap();
        assert_eq!(out.outcome, Outcome::Added);
        assert!(out
            .text
            .starts_with("// mine\n{\n  \"theme\": \"dark\", // keep\n"));
        assert!(out.text.contains("\"other\": {\"command\": \"x\"},"));
        let v: Value = json5::from_str(&out.text).unwrap();
        assert_eq!(v["mcpServers"]["ctx-shop"], entry());
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        let again = run(&out.text, Format::Jsonc).unwrap();
        assert_eq!(again.outcome, Outcome::Unchanged);
        assert_eq!(again.text, out.text);
    }

    #[test]
    fn a_different_entry_is_replaced_in_place_and_reported() {
        let text = "{\"mcpServers\": {\"ctx-shop\": {\"command\": \"old\"}, \"z\": {}}}";
        let out = run(text, Format::Json).unwrap();
        assert_eq!(out.outcome, Outcome::Replaces);
        let v: Value = serde_json::from_str(&out.text).unwrap();
        assert_eq!(v["mcpServers"]["ctx-shop"], entry());
        let keys: Vec<_> = v["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["ctx-shop", "z"], "the entry keeps its place");
    }

    #[test]
    fn what_the_host_could_not_read_is_refused() {
        for (text, why) in [
            ("{ broken", "line 1"),
            ("[1]", "not a JSON object"),
            ("{\"mcpServers\": 3}", "not an object"),
            ("{\"mcpServers\": {}, \"mcpServers\": {}}", "2 times"),
            ("{\"a\": 1 // no\n}", "Comments are not allowed"),
        ] {
            let err = run(text, Format::Json).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains("nothing was written"), "{err}");
        }
        let gemini = run("{\"a\": 1, /* c */ \"b\": 2,}", Format::JsonComments)
            .unwrap_err()
            .to_string();
        assert!(gemini.contains("railing comma"), "{gemini}");
        assert!(run("{\"a\": 1 /* c */}", Format::JsonComments).is_ok());
    }

    #[test]
    fn a_comment_only_or_empty_file_gets_the_document() {
        let out = run("// servers go here\n", Format::Jsonc).unwrap();
        assert!(out.text.starts_with("// servers go here\n"));
        let v: Value = json5::from_str(&out.text).unwrap();
        assert_eq!(v["mcpServers"]["ctx-shop"], entry());
        let empty = run("  \n", Format::Json).unwrap();
        let v: Value = serde_json::from_str(&empty.text).unwrap();
        assert_eq!(v["mcpServers"]["ctx-shop"], entry());
    }
}
