//! `ctx approvals list|approve|deny`: answer a running `ctx serve`'s approval
//! questions from another terminal. It reads the server's per-launch control file
//! (or `--url` and `CTX_SERVE_TOKEN`) and speaks plain HTTP to loopback.

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use ctx_core::error::{Error, Exit, Result};

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// The server (default: from the control file the running `ctx serve` wrote).
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,
    #[command(subcommand)]
    pub command: ApprovalsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Questions waiting for an answer, shown as inert text.
    List {
        /// `human` (default) or `json`.
        #[arg(long, default_value = "human", value_parser = ["human", "json"])]
        format: String,
    },
    /// Approve one question (critical fields: --confirm with the ids, or --password-file).
    Approve {
        id: String,
        /// For critical fields: the field ids, retyped.
        #[arg(long, value_name = "IDS")]
        confirm: Option<String>,
        /// For critical fields: confirm with the profile password read from this file.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// Deny one question.
    Deny { id: String },
}

struct Server {
    host: String,
    token: String,
}

fn server(g: &Global, url: Option<&str>) -> Result<Server> {
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

/// One HTTP/1.1 request to the loopback server; returns the status and JSON body.
fn request(s: &Server, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Value)> {
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
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
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
        body.to_string()
    };
    Ok((status, serde_json::from_str(&body).unwrap_or(Value::Null)))
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((len, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

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

/// One question as inert text, each field with its seed 004 tier (public, standard,
/// sensitive, critical) — the names a vault's owner set, not the classification
/// they map onto. Every untrusted string (consumer, purpose, proposed value) is quoted.
fn describe(ap: &Value) -> String {
    let s = |v: &Value| v.as_str().unwrap_or("?").to_string();
    let fields = ap["fields"].as_array().cloned().unwrap_or_default();
    let mut t = format!(
        "{} (until {})\n{} asks to {} {} field{}:\n",
        s(&ap["id"]),
        s(&ap["expires_at"]),
        shown_consumer(ap["consumer"].as_str().unwrap_or("?")),
        s(&ap["action"]),
        fields.len(),
        if fields.len() == 1 { "" } else { "s" }
    );
    for f in &fields {
        t.push_str(&format!("  - {} [{}]", s(&f["id"]), s(&f["sensitivity"])));
        // Already quoted by the server: shown as it came.
        if let Some(v) = f["proposed_value"].as_str() {
            t.push_str(&format!(" new value: {v}"));
        }
        t.push('\n');
    }
    match ap["purpose"].as_str() {
        Some(p) => t.push_str(&format!(
            "  purpose (stated by the requester, not verified): {}\n",
            ctx_core::approvals::quoted(p)
        )),
        None => t.push_str("  purpose: none stated\n"),
    }
    let critical: Vec<String> = ap["critical"]
        .as_array()
        .into_iter()
        .flatten()
        .map(s)
        .collect();
    if !critical.is_empty() {
        t.push_str(&format!(
            "  critical: approve with --confirm '{}' (or --password-file)\n",
            critical.join(",")
        ));
    }
    t
}

/// `consumer tax-prep-agent` as `consumer "tax-prep-agent"` (the name is data).
fn shown_consumer(c: &str) -> String {
    match c.strip_prefix("consumer ") {
        Some(name) => format!("consumer {}", ctx_core::approvals::quoted(name)),
        None => ctx_core::approvals::quoted(c),
    }
}

pub fn run(g: &Global, p: &Printer, a: &ApprovalsArgs) -> Result<Exit> {
    let s = server(g, a.url.as_deref())?;
    match &a.command {
        ApprovalsCommand::List { format } => {
            let (status, v) = request(&s, "GET", "/context/approvals", None)?;
            if status != 200 {
                return Err(fail(status, &v));
            }
            let list = v["approvals"].as_array().cloned().unwrap_or_default();
            let text = if format == "json" {
                format!("{}\n", serde_json::to_string_pretty(&v).expect("JSON"))
            } else if list.is_empty() {
                "no approvals waiting\n".to_string()
            } else {
                list.iter().map(describe).collect::<Vec<_>>().join("\n")
            };
            super::io_result(p.out(&text))?;
        }
        ApprovalsCommand::Approve {
            id,
            confirm,
            password_file,
        } => {
            let confirm = match (confirm, password_file) {
                (Some(c), _) => Some(c.clone()),
                (None, Some(_)) => Some(
                    super::personal::PasswordArgs {
                        password_file: password_file.clone(),
                    }
                    .read(false)?
                    .to_string(),
                ),
                (None, None) => None,
            };
            let (status, v) = request(
                &s,
                "POST",
                &format!("/context/approvals/{id}"),
                Some(&json!({"decision": "approve", "confirm": confirm})),
            )?;
            if status != 200 {
                return Err(fail(status, &v));
            }
            super::io_result(p.out(&format!("approved {id}\n")))?;
        }
        ApprovalsCommand::Deny { id } => {
            let (status, v) = request(
                &s,
                "POST",
                &format!("/context/approvals/{id}"),
                Some(&json!({"decision": "deny"})),
            )?;
            if status != 200 {
                return Err(fail(status, &v));
            }
            super::io_result(p.out(&format!("denied {id}\n")))?;
        }
    }
    Ok(Exit::Ok)
}
