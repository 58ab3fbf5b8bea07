//! `ctx mcp` on the wire, without an SDK: raw JSON-RPC lines in and out.
//! Bad input gets protocol errors and never a crash; stdout carries only
//! JSON-RPC; the server exits cleanly when stdin closes; an approval
//! round-trip in each protocol era (run with `CTX_MCP_TRANSCRIPT=1` and
//! `--nocapture` to print the transcripts). Also the done-when check: on this
//! project's own repository `resolve` gives the digest `ctx resolve` gives.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

use super::mcp::{call, connect, shop, Answer, Era, CONFIDENTIAL};

/// A `ctx mcp` child spoken to line by line.
struct Wire {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    transcript: Vec<String>,
}

impl Wire {
    fn start(dir: &std::path::Path, args: &[&str]) -> Wire {
        let mut cmd = Command::new(crate::support::CTX);
        crate::support::hermetic::apply(&mut cmd, &crate::support::hermetic::server_home());
        let mut child = cmd
            .arg("mcp")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctx mcp starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Wire {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            transcript: Vec::new(),
        }
    }

    fn send_raw(&mut self, line: &str) {
        self.transcript.push(format!("→ {line}"));
        let stdin = self.stdin.as_mut().expect("open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string());
    }

    /// The next line, parsed (every stdout line must be JSON).
    fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a reply within 30 s");
        let shown = if line.len() > 600 {
            format!("{}… ({} bytes)", &line[..600], line.len())
        } else {
            line.clone()
        };
        self.transcript.push(format!("← {shown}"));
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout is not JSON-RPC ({e}): {line}"))
    }

    /// Nothing arrives within `ms`.
    fn quiet(&mut self, ms: u64) -> bool {
        self.lines.recv_timeout(Duration::from_millis(ms)).is_err()
    }

    fn close(mut self) -> (i32, Vec<String>) {
        drop(self.stdin.take());
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return (status.code().unwrap_or(-1), self.transcript);
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn handshake(&mut self, elicit: bool) {
        let caps = if elicit {
            json!({"elicitation": {"form": {}}})
        } else {
            json!({})
        };
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": {"name": "wire-test", "version": "1"}}}),
        );
        let r = self.recv();
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

fn modern_meta(elicit: bool) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": if elicit { json!({"elicitation": {"form": {}}}) } else { json!({}) },
    })
}

fn show(name: &str, transcript: &[String]) {
    if std::env::var_os("CTX_MCP_TRANSCRIPT").is_some() {
        eprintln!("---- {name} ----\n{}\n", transcript.join("\n"));
    }
}

#[test]
fn bad_input_gets_protocol_errors_and_never_a_crash() {
    let repo = shop();
    let mut w = Wire::start(repo.path(), &["--agent", "helper"]);
    w.handshake(true);
    // Not JSON at all: no id to answer, so it is dropped (as every MCP SDK does); the server lives on.
    w.send_raw("{this is not json");
    assert!(w.quiet(300), "garbage produced output");
    // Well-formed JSON that is not a JSON-RPC message: Invalid Request.
    w.send(json!({"hello": "world"}));
    let r = w.recv();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    // Invalid ids (an object, a fraction): Invalid Request, never a crash.
    w.send_raw(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#);
    let r = w.recv();
    assert!(r["error"]["code"].is_i64(), "{r}");
    w.send_raw(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
    let r = w.recv();
    assert!(r.get("error").is_some() || r.get("result").is_some(), "{r}");
    // Unknown method.
    w.send(json!({"jsonrpc": "2.0", "id": 10, "method": "context/steal", "params": {}}));
    assert_eq!(w.recv()["error"]["code"], -32601);
    // Unknown tool.
    w.send(json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "rm_rf", "arguments": {}}}));
    let r = w.recv();
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // Oversized arguments.
    let big = "x".repeat(300 * 1024);
    w.send(json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "search", "arguments": {"query": big}}}));
    let r = w.recv();
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r.to_string().len() < 2000, "the error echoed the argument");
    // Invalid object ids, wrong types, unknown fields.
    for args in [
        json!({"id": "../../etc/passwd"}),
        json!({"id": 42}),
        json!({}),
        json!({"id": "policies.refunds", "extra": true}),
    ] {
        w.send(json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "context_get", "arguments": args}}));
        let r = w.recv();
        assert_eq!(r["error"]["code"], -32602, "{args}: {r}");
    }
    // Unknown resource.
    w.send(json!({"jsonrpc": "2.0", "id": 14, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}));
    assert_eq!(w.recv()["error"]["code"], -32002);
    // Still serving.
    w.send(json!({"jsonrpc": "2.0", "id": 15, "method": "ping"}));
    assert_eq!(w.recv()["id"], 15);
    let (code, _) = w.close();
    assert_eq!(code, 0, "clean exit when stdin closes");
}

#[test]
fn stdin_closing_before_any_message_is_a_clean_exit() {
    let repo = shop();
    let w = Wire::start(repo.path(), &["--agent", "helper"]);
    let (code, _) = w.close();
    assert_eq!(code, 0);
}

#[test]
fn an_unknown_or_missing_consumer_refuses_to_start() {
    let repo = shop();
    let r = repo.ctx(&["mcp", "--agent", "nobody"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("unknown agent `nobody`"));
    assert!(r.stdout.is_empty(), "stdout must stay clean");
    let r = repo.ctx(&["mcp"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--agent"), "{}", r.stderr);
    // A malformed default in the manifest is invalid, its fix a hint of its own: the
    // session still starts (the host shows the finding from every tool), and says
    // it on stderr; here stdin closes at once, a clean end.
    let manifest = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    repo.write(
        "opencontext.yaml",
        &manifest.replace("extensions:\n", "extensions:\n  ctx.mcp: {agnt: helper}\n"),
    );
    let r = repo.ctx(&["mcp"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("extensions.ctx.mcp: unknown key `agnt`")
            && r.stderr.contains("help: write `ctx.mcp: {agent: <name>}`"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "stdout must stay clean");
}

#[test]
fn approval_round_trip_in_the_handshake_era() {
    let repo = shop();
    let mut w = Wire::start(repo.path(), &["--agent", "helper"]);
    w.handshake(true);
    w.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "context_get", "arguments": {"id": "customers.acme"}}}));
    let ask = w.recv();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let msg = ask["params"]["message"].as_str().expect("message");
    assert!(msg.contains("customers.acme") && !msg.contains(CONFIDENTIAL));
    w.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"approve": true}}}));
    let done = w.recv();
    assert_eq!(done["id"], 2);
    assert!(done.to_string().contains(CONFIDENTIAL), "{done}");
    let (code, t) = w.close();
    assert_eq!(code, 0);
    show("handshake era (2025-11-25): approval round-trip", &t);
}

#[test]
fn approval_round_trip_in_the_2026_07_28_era() {
    let repo = shop();
    let mut w = Wire::start(repo.path(), &["--agent", "helper"]);
    w.send(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta(true)}}));
    let d = w.recv();
    assert!(
        d["result"]["supportedVersions"]
            .to_string()
            .contains("2026-07-28"),
        "{d}"
    );
    let args = json!({"id": "customers.acme"});
    w.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"_meta": modern_meta(true), "name": "context_get", "arguments": args}}));
    let ask = w.recv();
    assert_eq!(ask["result"]["resultType"], "input_required", "{ask}");
    assert!(!ask.to_string().contains(CONFIDENTIAL));
    let state = ask["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_string();
    w.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"_meta": modern_meta(true), "name": "context_get", "arguments": args,
        "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}, "requestState": state}}));
    let done = w.recv();
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert!(done.to_string().contains(CONFIDENTIAL));
    // The same state again: refused (single use).
    w.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"_meta": modern_meta(true), "name": "context_get", "arguments": args,
        "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}, "requestState": state}}));
    let again = w.recv();
    assert_eq!(again["result"]["isError"], true, "{again}");
    assert!(!again.to_string().contains(CONFIDENTIAL));
    let (code, t) = w.close();
    assert_eq!(code, 0);
    show(
        "2026-07-28 era: approval round-trip (input_required + sealed requestState)",
        &t,
    );
}

#[tokio::test(flavor = "current_thread")]
async fn resolve_gives_the_same_digest_as_ctx_resolve_on_this_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let cli = crate::support::ctx(
        root,
        &[
            "resolve",
            "--agent",
            "coding-agent",
            "--task",
            "add a command",
        ],
    );
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let want = cli.json()["digest"].as_str().expect("digest").to_string();
    for era in [Era::Handshake, Era::Modern] {
        let s = connect(
            root,
            &["--agent", "coding-agent"],
            era,
            true,
            Answer::Decline,
        )
        .await;
        let r = call(&s, "resolve", json!({"task": "add a command"})).await;
        let got = r.structured_content.clone().expect("structured")["digest"].clone();
        assert_eq!(got, json!(want), "{era:?}");
        let md = super::mcp::text(&r);
        assert!(md.contains(&want), "the Markdown names its digest");
        s.cancel().await.expect("close");
    }
}
