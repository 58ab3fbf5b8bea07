//! Adapter plugins: a scheme ctx does not build in is served by an executable
//! named `ctx-adapter-<scheme>` on `PATH` (the model of git remote helpers and
//! cargo subcommands), once the manifest enables that scheme with
//! `adapters.<scheme>.enabled: true`. The exchange is one JSON request on the
//! plugin's stdin and one JSON response on its stdout (see docs/adapters.md).
//!
//! A plugin is untrusted code from ctx's point of view: it runs only when the
//! resolver needs the content of an authorized, selected object, under a
//! deadline and a size bound, with the manifest folder as working directory;
//! whatever goes wrong (no such program, a crash, a timeout, a huge or
//! malformed answer, a digest that does not match the content) is a
//! `source-unavailable` with the reason, never empty content.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::manifest::Manifest;
use crate::model::Trust;

use super::{digest, AdapterError, AdapterOptions, Loaded};

/// The protocol name and version both sides put in every message.
pub const PROTOCOL: &str = "ctx-adapter/1";

/// Executables are named this, followed by the scheme.
pub const PREFIX: &str = "ctx-adapter-";

/// `adapters.<scheme>` keys ctx interprets itself; every other key is passed
/// to the plugin untouched, as `config`.
const OWN_KEYS: [&str; 6] = [
    "enabled",
    "package",
    "offline",
    "trust",
    "timeout_ms",
    "max_bytes",
];

/// Members a response may carry.
const RESPONSE_KEYS: [&str; 6] = [
    "protocol",
    "content",
    "content_type",
    "digest",
    "trust",
    "error",
];

/// Room for JSON escaping around the content in a response document.
const RESPONSE_OVERHEAD: u64 = 64 * 1024;

/// Longest piece of a plugin's stderr quoted in an error.
const STDERR_QUOTE: usize = 200;

/// Is `scheme` a name a plugin may serve (the manifest schema's scheme pattern)?
pub fn valid_scheme(scheme: &str) -> bool {
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c))
}

/// Has the manifest enabled a plugin for `scheme` (`adapters.<scheme>.enabled: true`)?
/// A plugin executes a program, so it is never on by default.
pub fn enabled(m: &Manifest, scheme: &str) -> bool {
    valid_scheme(scheme)
        && super::config(m, scheme)
            .and_then(|c| c.get("enabled"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
}

/// The executable that serves `scheme`: the first `ctx-adapter-<scheme>` in an
/// absolute `PATH` folder. Relative `PATH` entries (and an empty one, meaning the
/// current folder) are skipped, so a repository cannot plant its own plugin.
pub fn locate(scheme: &str) -> Option<PathBuf> {
    if !valid_scheme(scheme) {
        return None;
    }
    let name = format!("{PREFIX}{scheme}");
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .flat_map(|dir| {
            let plain = dir.join(&name);
            let exe = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
            [plain, exe]
        })
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

fn not_installed(uri: &str, scheme: &str) -> AdapterError {
    AdapterError::unavailable(
        uri,
        format!(
            "the manifest enables the `{scheme}` adapter plugin, but no executable `{PREFIX}{scheme}` is on PATH (install it, or disable `adapters.{scheme}`)"
        ),
    )
}

/// Check that the plugin for `uri` is enabled and installed, without running it
/// (what `doctor` may do for objects nobody asked to resolve).
pub fn probe(uri: &str, scheme: &str, m: &Manifest) -> Result<PathBuf, AdapterError> {
    if !enabled(m, scheme) {
        return Err(AdapterError::UnknownScheme(scheme.to_string()));
    }
    locate(scheme).ok_or_else(|| not_installed(uri, scheme))
}

/// The size cap: the run's, lowered (never raised) by `adapters.<scheme>.max_bytes`.
fn max_bytes(m: &Manifest, scheme: &str, opts: &AdapterOptions) -> u64 {
    super::config(m, scheme)
        .and_then(|c| c.get("max_bytes"))
        .and_then(Value::as_u64)
        .map_or(opts.max_bytes, |n| n.min(opts.max_bytes))
}

/// The request document sent on the plugin's stdin.
pub fn request(uri: &str, scheme: &str, m: &Manifest, timeout: Duration, cap: u64) -> Value {
    let config: Map<String, Value> = super::config(m, scheme)
        .map(|c| {
            c.iter()
                .filter(|(k, _)| !OWN_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "protocol": PROTOCOL,
        "operation": "load",
        "uri": uri,
        "scheme": scheme,
        "root": m.root.to_string_lossy(),
        "timeout_ms": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        "max_bytes": cap,
        "config": config,
    })
}

/// Read the content `uri` names through the scheme's plugin.
pub fn load(
    uri: &str,
    scheme: &str,
    m: &Manifest,
    opts: &AdapterOptions,
) -> Result<Loaded, AdapterError> {
    if !enabled(m, scheme) {
        return Err(AdapterError::UnknownScheme(scheme.to_string()));
    }
    let works_offline = super::config(m, scheme)
        .and_then(|c| c.get("offline"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if opts.offline && !works_offline {
        return Err(AdapterError::Offline(uri.to_string()));
    }
    let program = locate(scheme).ok_or_else(|| not_installed(uri, scheme))?;
    let timeout = super::timeout(m, scheme, opts);
    let cap = max_bytes(m, scheme, opts);
    let req = request(uri, scheme, m, timeout, cap);
    let mut cmd = Command::new(&program);
    cmd.current_dir(&m.root)
        .env("CTX_ADAPTER_PROTOCOL", PROTOCOL);
    let input = serde_json::to_vec(&req).expect("JSON values serialize");
    let out = exchange(
        cmd,
        &input,
        timeout,
        cap.saturating_mul(2) + RESPONSE_OVERHEAD,
    )
    .map_err(|why| {
        AdapterError::unavailable(uri, format!("plugin {}: {why}", program.display()))
    })?;
    let who = format!("plugin `{PREFIX}{scheme}`");
    let fail = |why: String| AdapterError::unavailable(uri, format!("{who} {why}"));
    let doc = parse_response(&out.stdout);
    if !out.success {
        // A plugin that explains itself is quoted; otherwise the exit status and stderr.
        if let Ok(Response::Error(message)) = &doc {
            return Err(fail(format!("failed: {message}")));
        }
        return Err(fail(format!(
            "failed with {}{}",
            out.status,
            stderr_quote(&out.stderr)
        )));
    }
    let (content, content_type, declared, trust) = match doc.map_err(|e| fail(e.to_string()))? {
        Response::Error(message) => return Err(fail(format!("failed: {message}"))),
        Response::Content {
            content,
            content_type,
            digest,
            trust,
        } => (content, content_type, digest, trust),
    };
    if content.len() as u64 > cap {
        return Err(fail(format!(
            "returned {} bytes of content, over the {cap}-byte limit",
            content.len()
        )));
    }
    let actual = digest(content.as_bytes());
    if !declared.eq_ignore_ascii_case(&actual) {
        return Err(fail(format!(
            "returned content whose digest is {actual}, not the {declared} it declared"
        )));
    }
    Ok(Loaded {
        content: Value::String(content),
        content_type: Some(content_type),
        digest: actual,
        trust: super::adapter_trust(m, scheme, trust),
    })
}

/// A well-formed response.
#[derive(Debug, PartialEq)]
enum Response {
    Content {
        content: String,
        content_type: String,
        digest: String,
        trust: Trust,
    },
    Error(String),
}

/// Why a plugin's answer is unusable (the message follows "plugin `X`").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ResponseError {
    #[error("answered with bytes that are not UTF-8")]
    NotUtf8,
    #[error("answered nothing on stdout (expected one JSON response)")]
    Empty,
    #[error("answered with invalid JSON at line {line}, column {column}: {message}")]
    BadJson {
        line: u32,
        column: u32,
        message: String,
    },
    #[error("answered with JSON that is not an object")]
    NotObject,
    #[error("answered with the unknown member `{0}` (expected {expected})", expected = RESPONSE_KEYS.join(", "))]
    UnknownMember(String),
    #[error("answered with protocol {shown}, not \"{PROTOCOL}\"", shown = .0.as_ref().map_or("(missing)".to_string(), |p| format!("{p:?}")))]
    Protocol(Option<String>),
    #[error("answered with an `error` that has no `message` string")]
    ErrorWithoutMessage,
    #[error("answered without a `{0}` string")]
    Missing(String),
    #[error("answered with the content type {0:?} (expected a media type such as text/markdown)")]
    ContentType(String),
    #[error("answered with the digest {0:?} (expected sha256:<64 hex digits>)")]
    Digest(String),
    #[error("answered with the trust {0} (expected trusted, verified or untrusted)")]
    Trust(String),
}

/// Why running a plugin failed before it answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ExchangeError {
    #[error("cannot start: {0}")]
    Start(String),
    #[error("reading its answer failed: {0}")]
    Read(String),
    #[error("gave no complete answer within {0} ms")]
    Timeout(u128),
    #[error("answered with more than {0} bytes")]
    TooLarge(u64),
    #[error("waiting for it failed: {0}")]
    Wait(String),
}

/// Parse and check a response document (strict JSON, closed member set).
fn parse_response(bytes: &[u8]) -> Result<Response, ResponseError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ResponseError::NotUtf8)?;
    if text.trim().is_empty() {
        return Err(ResponseError::Empty);
    }
    let v = crate::json::parse(text).map_err(|e| ResponseError::BadJson {
        line: e.line,
        column: e.column,
        message: e.message,
    })?;
    let Value::Object(map) = v else {
        return Err(ResponseError::NotObject);
    };
    if let Some(k) = map.keys().find(|k| !RESPONSE_KEYS.contains(&k.as_str())) {
        return Err(ResponseError::UnknownMember(k.clone()));
    }
    match map.get("protocol").and_then(Value::as_str) {
        Some(PROTOCOL) => {}
        other => return Err(ResponseError::Protocol(other.map(str::to_string))),
    }
    if let Some(e) = map.get("error") {
        let message = e
            .get("message")
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
            .ok_or(ResponseError::ErrorWithoutMessage)?;
        return Ok(Response::Error(clip(message)));
    }
    let string = |key: &str| -> Result<String, ResponseError> {
        map.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ResponseError::Missing(key.to_string()))
    };
    let content = string("content")?;
    let content_type = string("content_type")?;
    if content_type.trim().is_empty() || !content_type.contains('/') {
        return Err(ResponseError::ContentType(content_type));
    }
    let digest = string("digest")?;
    let well_formed = digest
        .strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if !well_formed {
        return Err(ResponseError::Digest(clip(&digest)));
    }
    let trust = match map.get("trust") {
        None => Trust::Untrusted,
        Some(t) => t
            .as_str()
            .and_then(Trust::parse)
            .ok_or_else(|| ResponseError::Trust(t.to_string()))?,
    };
    Ok(Response::Content {
        content,
        content_type,
        digest,
        trust,
    })
}

/// At most [`STDERR_QUOTE`] characters of one line, control characters removed.
fn clip(s: &str) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut out: String = line
        .chars()
        .filter(|c| !c.is_control())
        .take(STDERR_QUOTE)
        .collect();
    if line.chars().count() > STDERR_QUOTE {
        out.push('…');
    }
    out
}

fn stderr_quote(stderr: &str) -> String {
    let q = clip(stderr);
    if q.is_empty() {
        String::new()
    } else {
        format!(" ({q})")
    }
}

/// What a finished plugin produced.
struct Exchanged {
    success: bool,
    status: String,
    stdout: Vec<u8>,
    stderr: String,
}

/// Run `cmd`, write `input` to its stdin, and collect its stdout (at most
/// `max_stdout` bytes) and stderr, all within `timeout`. The child is killed on
/// overrun. Pipes are drained by threads whose results are awaited only until
/// the deadline, so a plugin that leaves a background process holding its stdout
/// cannot stall ctx either.
fn exchange(
    mut cmd: Command,
    input: &[u8],
    timeout: Duration,
    max_stdout: u64,
) -> Result<Exchanged, ExchangeError> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let deadline = Instant::now() + timeout;
    let mut child = cmd
        .spawn()
        .map_err(|e| ExchangeError::Start(e.to_string()))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = input.to_vec();
    // A plugin may exit without reading its request; a broken pipe is not our error.
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let (out_tx, out_rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout is piped");
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = stdout.take(max_stdout + 1).read_to_end(&mut buf);
        let _ = out_tx.send(r.map(|_| buf));
    });
    let (err_tx, err_rx) = mpsc::channel();
    let stderr = child.stderr.take().expect("stderr is piped");
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.take(16 * 1024).read_to_end(&mut buf);
        let _ = err_tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    let timed_out = || ExchangeError::Timeout(timeout.as_millis());
    // The stdout reader ends when the plugin closes stdout (normally: when it exits)
    // or when the answer passes the size bound.
    let stdout = match out_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(buf)) => buf,
        Ok(Err(e)) => {
            kill(&mut child);
            return Err(ExchangeError::Read(e.to_string()));
        }
        Err(_) => {
            kill(&mut child);
            return Err(timed_out());
        }
    };
    if stdout.len() as u64 > max_stdout {
        kill(&mut child);
        return Err(ExchangeError::TooLarge(max_stdout));
    }
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill(&mut child);
                return Err(timed_out());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => {
                kill(&mut child);
                return Err(ExchangeError::Wait(e.to_string()));
            }
        }
    };
    let stderr = err_rx
        .recv_timeout(Duration::from_millis(100))
        .unwrap_or_default();
    Ok(Exchanged {
        success: status.success(),
        status: status.to_string(),
        stdout,
        stderr,
    })
}

fn kill(child: &mut std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(body: &str) -> String {
        json!({
            "protocol": PROTOCOL,
            "content": body,
            "content_type": "text/plain",
            "digest": digest(body.as_bytes()),
        })
        .to_string()
    }

    #[test]
    fn scheme_names_are_checked_before_any_lookup() {
        assert!(valid_scheme("crm"));
        assert!(valid_scheme("s3+v2.x-y"));
        for bad in ["", "CRM", "1crm", "crm/../x", "a b", "crm\0"] {
            assert!(!valid_scheme(bad), "{bad:?}");
            assert_eq!(locate(bad), None);
        }
    }

    #[test]
    fn responses_are_parsed_strictly() {
        assert!(matches!(
            parse_response(content("hello").as_bytes()),
            Ok(Response::Content {
                trust: Trust::Untrusted,
                ..
            })
        ));
        let err = json!({"protocol": PROTOCOL, "error": {"message": "no such record\nmore"}});
        assert_eq!(
            parse_response(err.to_string().as_bytes()),
            Ok(Response::Error("no such record".into()))
        );
        for (bad, why) in [
            ("", "nothing"),
            ("not json", "invalid JSON"),
            ("[1]", "not an object"),
            (
                r#"{"protocol":"ctx-adapter/1","content":"x","content":"y"}"#,
                "invalid JSON",
            ),
            (r#"{"protocol":"ctx-adapter/2","content":"x"}"#, "protocol"),
            (
                r#"{"protocol":"ctx-adapter/1","content":"x","contents":"y"}"#,
                "unknown member",
            ),
            (
                r#"{"protocol":"ctx-adapter/1","content":"x","digest":"sha256:00"}"#,
                "content_type",
            ),
            (
                r#"{"protocol":"ctx-adapter/1","content":"x","content_type":"text/plain","digest":"md5:00"}"#,
                "digest",
            ),
            (r#"{"protocol":"ctx-adapter/1","error":{}}"#, "message"),
        ] {
            let e = parse_response(bad.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let raised = json!({
            "protocol": PROTOCOL, "content": "x", "content_type": "text/plain",
            "digest": digest(b"x"), "trust": "gospel",
        });
        assert!(parse_response(raised.to_string().as_bytes())
            .unwrap_err()
            .to_string()
            .contains("trust"));
    }

    #[test]
    fn quoted_stderr_is_one_bounded_line() {
        let long = format!("\n\x1b[31mboom{}\nsecond line", "x".repeat(500));
        let q = clip(&long);
        assert!(q.starts_with("[31mboom"), "{q}");
        assert!(q.chars().count() <= STDERR_QUOTE + 1);
        assert!(!q.contains("second"));
    }
}
