//! The content a writer names by file (`ctx add --data`, `--content-file`):
//! read from inside the repository only (links resolved, so none points out),
//! bounded, and structured data parsed strictly (duplicate keys refused), with
//! errors naming the file, line and column.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::fs::confine;

/// The largest content file a write reads.
pub const MAX_CONTENT_BYTES: u64 = 4 * 1024 * 1024;

/// The bytes of `path` (relative to `cwd`), which must be a regular file inside `root`.
pub fn read_in_repo(root: &Path, cwd: &Path, path: &Path, flag: &str) -> Result<Vec<u8>> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let shown = path.display();
    let root_real = root.canonicalize().map_err(|e| Error::io(root, &e))?;
    let inside = confine::rel_in_root(&root_real, cwd, path).is_some();
    if !inside {
        return Err(Error::Usage(format!(
            "{flag} {shown} is outside the repository folder {}: content files must be inside it",
            root.display()
        )));
    }
    crate::fs::read_regular(&abs, MAX_CONTENT_BYTES).map_err(|e| match e {
        crate::fs::ReadError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            Error::NotFound(format!("{flag} {shown}: no such file"))
        }
        other => Error::Invalid(format!("{flag} {shown}: {other}")),
    })
}

/// Structured content: JSON for a `.json` name, YAML otherwise (stdin, `.yaml`,
/// `.yml`; YAML 1.2 reads JSON too). `name` is what errors call the source.
pub fn parse_data(name: &str, bytes: &[u8]) -> Result<Value> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Error::Invalid(format!("{name}: not UTF-8 text")))?;
    let parsed = if name.ends_with(".json") {
        crate::json::parse(text).map_err(|e| (e.line, e.column, e.message))
    } else {
        crate::yaml::parse(text).map_err(|e| (e.line, e.column, e.message))
    };
    let value = parsed.map_err(|(line, column, message)| Error::InvalidHint {
        message: format!("{name}:{line}:{column}: {message}"),
        help: "--data takes one JSON or YAML document (a mapping or a list)".into(),
    })?;
    if !value.is_object() && !value.is_array() {
        return Err(Error::InvalidHint {
            message: format!(
                "{name}: structured content must be a mapping or a list, got {}",
                kind(&value)
            ),
            help: "for text, use --content or --content-file".into(),
        });
    }
    Ok(value)
}

/// Text content from a file: UTF-8, kept as written.
pub fn text(name: &str, bytes: Vec<u8>) -> Result<Value> {
    String::from_utf8(bytes)
        .map(Value::from)
        .map_err(|_| Error::Invalid(format!("{name}: not UTF-8 text")))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_json_or_yaml_and_strict() {
        assert_eq!(parse_data("a.json", b"{\"x\": 1}").unwrap()["x"], 1);
        assert_eq!(parse_data("-", b"x: [1, 2]\n").unwrap()["x"][1], 2);
        let dup = parse_data("a.json", b"{\"x\": 1, \"x\": 2}").unwrap_err();
        assert!(dup.to_string().starts_with("a.json:1:"), "{dup}");
        assert!(parse_data("b.yaml", b"just text\n").is_err());
        assert!(parse_data("b.yaml", &[0xff]).is_err());
    }

    #[test]
    fn content_files_stay_inside_the_repository() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("s.txt"), "secret").unwrap();
        std::fs::write(root.path().join("in.md"), "hello").unwrap();
        let r = root.path();
        assert_eq!(
            read_in_repo(r, r, Path::new("in.md"), "--content-file").unwrap(),
            b"hello"
        );
        let e = read_in_repo(r, r, &out.path().join("s.txt"), "--data").unwrap_err();
        assert!(e.to_string().contains("outside the repository"), "{e}");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(out.path().join("s.txt"), r.join("link.md")).unwrap();
            let e = read_in_repo(r, r, Path::new("link.md"), "--data").unwrap_err();
            assert!(e.to_string().contains("outside the repository"), "{e}");
        }
        let e = read_in_repo(r, r, Path::new("none.md"), "--data").unwrap_err();
        assert_eq!(e.exit(), crate::error::Exit::NotFound);
    }
}
