//! Writing an object document the way a person would: Markdown with YAML front
//! matter, plain YAML, or JSON. Plain scalars where YAML reads them back as the
//! same string, JSON-quoted scalars everywhere else.

use serde_json::{Map, Value};

use crate::object::Format;

/// Can `s` be written as a plain YAML scalar (block context) and read back as this string?
fn plain_ok(s: &str, flow: bool) -> bool {
    const WORDS: [&str; 12] = [
        "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~", "nan", "inf",
    ];
    let first = s.chars().next();
    !s.is_empty()
        && s.trim() == s
        && !WORDS.contains(&s.to_ascii_lowercase().trim_start_matches(['.', '+', '-']))
        && first.is_some_and(|c| c.is_alphanumeric() || "./_".contains(c))
        && s.parse::<f64>().is_err()
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && s.chars()
            .all(|c| !c.is_control() && !"{}[]\"'`&*!|>%@".contains(c))
        && !(flow && s.contains(','))
}

fn scalar(v: &Value, flow: bool) -> String {
    match v {
        Value::String(s) if plain_ok(s, flow) => s.clone(),
        Value::Array(items) if items.iter().all(|i| !i.is_array() && !i.is_object()) => {
            let parts: Vec<String> = items.iter().map(|i| scalar(i, true)).collect();
            format!("[{}]", parts.join(", "))
        }
        other => other.to_string(),
    }
}

/// YAML for a top-level mapping: plain keys, plain or JSON scalars, flow lists of
/// scalars, and nested structures in JSON flow style (valid YAML 1.2).
pub fn yaml_map(fields: &Map<String, Value>) -> String {
    let mut out = String::new();
    for (k, v) in fields {
        let key = if plain_ok(k, false) {
            k.clone()
        } else {
            Value::from(k.as_str()).to_string()
        };
        match v {
            Value::String(s)
                if s.contains('\n') && !s.contains('\r') && !s.starts_with([' ', '\n']) =>
            {
                let chomp = if s.ends_with('\n') { "" } else { "-" };
                out.push_str(&format!("{key}: |{chomp}\n"));
                for line in s.strip_suffix('\n').unwrap_or(s).split('\n') {
                    if line.is_empty() {
                        out.push('\n');
                    } else {
                        out.push_str(&format!("  {line}\n"));
                    }
                }
            }
            _ => out.push_str(&format!("{key}: {}\n", scalar(v, false))),
        }
    }
    out
}

/// The file text for `fields` (without content) and `content` in `format`.
pub fn document(format: Format, fields: &Map<String, Value>, content: Option<&Value>) -> String {
    // Keys in the order `ctx fmt` keeps, so a written file is already formatted.
    let fields = &crate::reformat::order::canonical(fields);
    match format {
        Format::Markdown => {
            let mut out = format!("---\n{}---\n", yaml_map(fields));
            match content {
                Some(Value::String(body)) => {
                    out.push('\n');
                    out.push_str(body.trim_end_matches('\n'));
                    out.push('\n');
                }
                Some(other) => {
                    // Structured content cannot be a Markdown body; keep it in the front matter.
                    let mut f = fields.clone();
                    f.insert("content".into(), other.clone());
                    return document(Format::Markdown, &f, None);
                }
                None => {}
            }
            out
        }
        Format::Yaml => {
            let mut f = fields.clone();
            if let Some(c) = content {
                f.insert("content".into(), c.clone());
            }
            yaml_map(&f)
        }
        Format::Json => {
            let mut f = fields.clone();
            if let Some(c) = content {
                f.insert("content".into(), c.clone());
            }
            let mut s = serde_json::to_string_pretty(&Value::Object(f)).expect("serializable");
            s.push('\n');
            s
        }
    }
}

/// Add `version: 1` to an object file that declares no version, as a one-line
/// insertion (after the top-level `id:` line, else at the top of the document),
/// so a successor can name it precisely. Returns None when no safe insertion exists.
pub fn annotate_version(text: &str, format: Format) -> Option<String> {
    match format {
        Format::Json => {
            let brace = text.find('{')?;
            let (head, tail) = text.split_at(brace + 1);
            Some(format!("{head}\n  \"version\": 1,{tail}"))
        }
        Format::Yaml => Some(insert_after_id(text, 0)),
        Format::Markdown => {
            let fm = crate::frontmatter::split(text).ok()?;
            if fm.yaml.is_none() {
                return Some(format!("---\nversion: 1\n---\n\n{text}"));
            }
            // The front matter starts after the opening fence line.
            let start = text.find('\n')? + 1;
            let (head, rest) = text.split_at(start);
            let end = if rest.starts_with("---") {
                0
            } else {
                rest.find("\n---").map(|i| i + 1)?
            };
            let (yaml, after) = rest.split_at(end);
            Some(format!("{head}{}{after}", insert_after_id(yaml, 0)))
        }
    }
}

fn insert_after_id(yaml: &str, _indent: usize) -> String {
    let mut out = String::with_capacity(yaml.len() + 12);
    let mut done = false;
    for line in yaml.split_inclusive('\n') {
        out.push_str(line);
        if !done && (line.starts_with("id:") || line.starts_with("\"id\":")) {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("version: 1\n");
            done = true;
        }
    }
    if done {
        out
    } else {
        format!("version: 1\n{yaml}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_where_safe_quoted_elsewhere() {
        let f = json!({"id": "policies.returns", "title": "Returns: the rules", "owner": "yes",
                       "version": 2, "updated": "2026-11-30T10:00:00Z", "tags": ["a", "b,c"]});
        let y = yaml_map(f.as_object().unwrap());
        assert!(y.contains("id: policies.returns\n"), "{y}");
        assert!(y.contains("title: \"Returns: the rules\"\n"), "{y}");
        assert!(y.contains("owner: \"yes\"\n"), "{y}");
        assert!(y.contains("version: 2\n"), "{y}");
        assert!(y.contains("updated: 2026-11-30T10:00:00Z\n"), "{y}");
        assert!(y.contains("tags: [a, \"b,c\"]\n"), "{y}");
        let back = crate::yaml::parse(&y).expect("valid YAML");
        assert_eq!(back, f);
    }

    #[test]
    fn markdown_document_round_trips() {
        let f = json!({"id": "a.b", "type": "policy"});
        let text = document(
            Format::Markdown,
            f.as_object().unwrap(),
            Some(&json!("Body\n\nmore")),
        );
        assert_eq!(text, "---\nid: a.b\ntype: policy\n---\n\nBody\n\nmore\n");
    }

    #[test]
    fn version_annotation_is_one_line() {
        let md = "---\nid: p\ntype: policy\n---\n\nbody\n";
        assert_eq!(
            annotate_version(md, Format::Markdown).unwrap(),
            "---\nid: p\nversion: 1\ntype: policy\n---\n\nbody\n"
        );
        let bare = "just a body\n";
        assert_eq!(
            annotate_version(bare, Format::Markdown).unwrap(),
            "---\nversion: 1\n---\n\njust a body\n"
        );
        let y = "type: policy\nid: p\n";
        assert_eq!(
            annotate_version(y, Format::Yaml).unwrap(),
            "type: policy\nid: p\nversion: 1\n"
        );
        let j = "{\n  \"id\": \"p\"\n}\n";
        let a = annotate_version(j, Format::Json).unwrap();
        let v: Value = serde_json::from_str(&a).unwrap();
        assert_eq!(v["version"], 1);
    }
}
