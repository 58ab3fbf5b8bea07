//! The loopback HTTP client `ctx approvals` speaks to a running `ctx serve`:
//! where the server is (its per-launch control file, or `--url` with
//! `CTX_SERVE_TOKEN`), and one plain HTTP/1.1 request at a time.

use std::io::{Read, Write};

use serde_json::Value;

use ctx_core::error::{Error, Result};

use crate::cli::Global;

pub struct Server {
    host: String,
    token: String,
}

/// The server to ask: `--url` with `CTX_SERVE_TOKEN`, else the control file the
/// running `ctx serve` of this vault wrote (its URL, unless `--url` names another).
pub fn server(g: &Global, url: Option<&str>) -> Result<Server> {
    let (url, token) = match (url, std::env::var("CTX_SERVE_TOKEN").ok()) {
        (Some(u), Some(t)) => (u.to_string(), t),
        _ => {
            let (m, _) = ctx_core::manifest::Manifest::discover(g.dir.as_deref(), &g.cwd)?;
            let cfg = ctx_core::personal::config::PersonalConfig::require(&m)?;
            let path = crate::serve::control::path(&cfg.vault)?;
            let text = std::fs::read_to_string(&path).map_err(|_| {
                Error::NotFound(format!(
                    "no running `ctx serve` for this vault (no {}); start it, or give --url with CTX_SERVE_TOKEN",
                    path.display()
                ))
            })?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
            (
                url.map(str::to_string)
                    .unwrap_or_else(|| v["url"].as_str().unwrap_or("").to_string()),
                v["control_token"].as_str().unwrap_or("").to_string(),
            )
        }
    };
    let host = url
        .strip_prefix("http://")
        .ok_or_else(|| Error::Usage(format!("--url: expected http://HOST:PORT, found `{url}`")))?
        .trim_end_matches('/')
        .to_string();
    Ok(Server { host, token })
}

/// One HTTP/1.1 request to the loopback server; returns the status and the JSON body.
fn request(
    s: &Server,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, Option<Value>)> {
    let mut conn = std::net::TcpStream::connect(&s.host)
        .map_err(|e| Error::Usage(format!("cannot reach ctx serve at {}: {e}", s.host)))?;
    let payload = body.map(Value::to_string).unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n",
        s.host, s.token
    );
    if body.is_some() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            payload.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(&payload);
    conn.write_all(req.as_bytes())
        .map_err(|e| Error::io(&s.host, &e))?;
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw)
        .map_err(|e| Error::io(&s.host, &e))?;
    response(&raw)
}

/// A raw HTTP/1.1 response: its status and, if the body is JSON, the body.
/// Framing is undone on bytes, so a chunk boundary inside a character is harmless.
fn response(raw: &[u8]) -> Result<(u16, Option<Value>)> {
    let (head, body) = match raw.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => (&raw[..i], &raw[i + 4..]),
        None => (raw, &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| Error::Invalid("ctx serve sent no HTTP status".into()))?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_vec()
    };
    Ok((status, serde_json::from_slice(&body).ok()))
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
        let n = std::str::from_utf8(&rest[..i])
            .ok()
            .and_then(|line| usize::from_str_radix(line.split(';').next()?.trim(), 16).ok())
            .unwrap_or(0);
        let tail = &rest[i + 2..];
        if n == 0 || tail.len() < n {
            break;
        }
        out.extend_from_slice(&tail[..n]);
        rest = tail[n..].strip_prefix(b"\r\n").unwrap_or(&tail[n..]);
    }
    out
}

/// A non-200 answer as an error: 404 is not found, anything else invalid.
fn fail(status: u16, v: &Value) -> Error {
    let msg = format!(
        "ctx serve answered {status}: {}",
        v["error"].as_str().unwrap_or("no message")
    );
    if status == 404 {
        Error::NotFound(msg)
    } else {
        Error::Invalid(msg)
    }
}

/// One request; any answer but 200 is an error.
pub fn ask(s: &Server, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    match request(s, method, path, body)? {
        (200, Some(v)) => Ok(v),
        // Never "no approvals waiting" from an answer that could not be read.
        (200, None) => Err(Error::Invalid(
            "ctx serve answered 200 with a body that is not JSON".into(),
        )),
        (status, v) => Err(fail(status, &v.unwrap_or(Value::Null))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_reassembled_on_bytes() {
        // "é" (c3 a9) split across two chunks.
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\":\"\xc3\r\n3\r\n\xa9\"}\r\n0\r\n\r\n";
        let (status, v) = response(raw).expect("parses");
        assert_eq!(status, 200);
        assert_eq!(v, Some(serde_json::json!({"a": "é"})));
    }

    #[test]
    fn a_body_that_is_not_json_is_none_not_an_empty_answer() {
        let (status, v) = response(b"HTTP/1.1 200 OK\r\n\r\n<html>").expect("parses");
        assert_eq!((status, v), (200, None));
        assert!(response(b"garbage").is_err());
    }
}
