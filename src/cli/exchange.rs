//! `ctx exchange issue|open|revoke|exec|policy|keys` and the hidden
//! `kit-adapter`: the bundle side of the Context Layer exchange. Also the
//! helpers every exchange command shares (loading, `--at`, error mapping).

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use ctx_core::error::{Error, Exit, Result};
use ctx_core::exchange::consumer::{ActionResult, ExecOutcome};
use ctx_core::exchange::error::{ClError, ErrorKind};
use ctx_core::exchange::ops::bundles::{self, ConsumerOptions, IssueOptions};
use ctx_core::exchange::ops::Exchange;
use ctx_core::exchange::view::ViewOptions;
use ctx_core::exchange::{canon, kit, local};
use ctx_core::load::Repo;
use ctx_core::signing::PublicKey;
use ctx_core::time::Instant;

use super::{Global, Printer};

/// Flags every exchange command that reads the repository shares.
#[derive(Debug, Args, Clone, Default)]
pub struct CommonArgs {
    /// Act as of this RFC 3339 instant (default: now).
    #[arg(long)]
    pub at: Option<String>,
    /// `human` or `json`.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
}

impl CommonArgs {
    pub fn json(&self) -> bool {
        self.format == "json"
    }
}

/// `--at` or now, at the profile's millisecond resolution.
pub fn at(s: Option<&str>) -> Result<Instant> {
    let t = match s {
        Some(s) => canon::parse_time(s).ok_or_else(|| {
            Error::Usage(format!(
                "--at `{s}` is not an RFC 3339 instant such as 2026-08-09T12:00:00Z"
            ))
        })?,
        None => chrono::Utc::now(),
    };
    Ok(canon::to_ms(t))
}

/// Load the repository the global flags point at.
pub fn repo(g: &Global) -> Result<Repo> {
    super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)
}

/// The exchange over a loaded repository.
pub fn exchange<'r>(g: &Global, repo: &'r Repo, _c: &CommonArgs) -> Result<Exchange<'r>> {
    Exchange::new(repo, ViewOptions { offline: g.offline }).map_err(cl)
}

/// A protocol error as a command error (code first, so scripts can match it).
pub fn cl(e: ClError) -> Error {
    let text = format!("{}: {}", e.code, e.message);
    match e.kind() {
        ErrorKind::Usage => Error::Usage(e.message),
        ErrorKind::NotFound => Error::NotFound(text),
        ErrorKind::Rejected => Error::Invalid(text),
    }
}

/// The 0.2-draft `error` object, for `--format json`.
pub fn error_object(e: &ClError, at: Instant) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("spec_version".into(), json!("context-layer/0.2-draft"));
    m.insert("type".into(), json!("error"));
    m.insert("created_at".into(), json!(canon::iso_ms(&at)));
    m.insert("issuer".into(), json!({"id": "urn:cl:gateway:ctx"}));
    m.insert("code".into(), json!(e.code));
    m.insert("message".into(), json!(e.message));
    m.insert("retryable".into(), json!(e.retryable()));
    canon::finalize(m, "urn:cl:error:")
}

/// Report a protocol error: on stdout as an error object with `--format json`,
/// always on stderr (through the returned error).
pub fn reject(p: &Printer, c: &CommonArgs, e: ClError) -> Error {
    if c.json() {
        let at = at(c.at.as_deref()).unwrap_or_else(|_| chrono::Utc::now());
        let _ = p.out(&(serde_json::to_string_pretty(&error_object(&e, at)).expect("JSON") + "\n"));
    }
    cl(e)
}

/// Read a file (`-`: stdin) as bytes.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| Error::io("<stdin>", &e))?;
        return Ok(b);
    }
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::NotFound(format!("{}: no such file", path.display()))
        }
        _ => Error::io(path, &e),
    })
}

/// Read a JSON document strictly (duplicate members refused).
pub fn read_doc(path: &Path) -> Result<Value> {
    let bytes = read_bytes(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::Invalid(format!("{}: not UTF-8 text", path.display())))?;
    ctx_core::json::parse(&text).map_err(|e| {
        Error::Invalid(format!(
            "INVALID_JSON: {}:{}:{}: {}\n  help: the file must be one JSON document",
            path.display(),
            e.line,
            e.column,
            e.message
        ))
    })
}

/// Print a JSON document.
pub fn print_json(p: &Printer, v: &Value) -> Result<()> {
    super::io_result(p.out(&(serde_json::to_string_pretty(v).expect("JSON") + "\n")))
}

#[derive(Debug, Args)]
pub struct ExchangeArgs {
    #[command(subcommand)]
    pub command: ExchangeCommand,
}

#[derive(Debug, Subcommand)]
pub enum ExchangeCommand {
    /// Issue a signed, recipient-bound bundle from an allowing decision.
    Issue(IssueArgs),
    /// Open a bundle as its recipient (once): verify, record `bundle.consume`, print the context.
    Open(OpenArgs),
    /// Revoke an issued bundle: later opens, actions and proposals are refused.
    Revoke(RevokeArgs),
    /// Run a command as a granted action of an opened bundle.
    Exec(ExecArgs),
    /// Print the policy object (and its snapshot digest) the repository applies to a requester.
    Policy(PolicyArgs),
    /// Print a key's public half as a `ctx.exchange.keys` entry.
    Keys(KeysArgs),
    /// Speak the Context Layer conformance kit's adapter contract on stdin/stdout.
    #[command(name = "kit-adapter", hide = true)]
    KitAdapter,
}

#[derive(Debug, Args)]
pub struct IssueArgs {
    /// A decision file written by `ctx request evaluate`.
    pub decision: PathBuf,
    /// Bundle signing key id (purpose `bundle`; default: ctx.exchange.issuer_key).
    #[arg(long)]
    pub key: Option<String>,
    /// Also write the envelope here (atomically).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args, Clone)]
pub struct ConsumerArgs {
    /// The envelope file as received.
    pub envelope: PathBuf,
    /// Who is opening: an agent name, `role:<name>` or a principal URI.
    #[arg(long = "as", value_name = "RECIPIENT")]
    pub recipient: String,
    /// Trust only this issuer key: `KID=BASE64` (repeatable; default: the repository's bundle keys).
    #[arg(long, value_name = "KID=KEY")]
    pub trust: Vec<String>,
}

#[derive(Debug, Args)]
pub struct OpenArgs {
    #[command(flatten)]
    pub who: ConsumerArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// Bundle id (`urn:cl:bundle:…`) or envelope file.
    pub bundle: String,
    /// Why (recorded in the receipt).
    #[arg(long, default_value = "revoked by the issuer")]
    pub reason: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// The granted capability this command exercises (e.g. email.create_draft).
    #[arg(long)]
    pub action: String,
    /// The command and its arguments (after `--`); it receives the context as JSON on stdin.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// The requester: an agent name or `role:<name>`.
    #[arg(long = "as", value_name = "REQUESTER")]
    pub requester: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct KeysArgs {
    /// Key id in your key folder (see `ctx keys generate`).
    pub id: String,
    /// What the key will sign: `bundle` or `anchor`.
    #[arg(long, value_parser = ["bundle", "anchor"])]
    pub purpose: String,
}

pub fn run(g: &Global, p: &Printer, a: &ExchangeArgs) -> Result<Exit> {
    match &a.command {
        ExchangeCommand::Issue(x) => issue(g, p, x),
        ExchangeCommand::Open(x) => open(g, p, x),
        ExchangeCommand::Revoke(x) => revoke(g, p, x),
        ExchangeCommand::Exec(x) => exec(g, p, x),
        ExchangeCommand::Policy(x) => policy(g, p, x),
        ExchangeCommand::Keys(x) => keys(p, x),
        ExchangeCommand::KitAdapter => kit_adapter(),
    }
}

fn issue(g: &Global, p: &Printer, a: &IssueArgs) -> Result<Exit> {
    let c = &a.common;
    let decision = read_doc(&a.decision)?;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let issued = bundles::issue(
        &ex,
        &IssueOptions {
            decision,
            key: a.key.clone(),
            at: at(c.at.as_deref())?,
        },
    )
    .map_err(|e| reject(p, c, e))?;
    if let Some(out) = &a.output {
        super::io_result(p.product_json(&issued.envelope, Some(out)))?;
    }
    if c.json() || a.output.is_none() {
        print_json(p, &issued.envelope)?;
    }
    let _ = p.err(&format!(
        "issued {} for {} (expires {}); stored {}\n",
        issued.bundle_id,
        issued.envelope["bundle"]["recipient"]
            .as_str()
            .unwrap_or(""),
        issued.envelope["bundle"]["expires_at"]
            .as_str()
            .unwrap_or(""),
        issued.path.display()
    ));
    Ok(Exit::Ok)
}

fn trust(args: &[String]) -> Result<Option<Vec<(String, PublicKey)>>> {
    if args.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for t in args {
        let (kid, key) = t
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--trust `{t}`: expected KID=BASE64")))?;
        let key = PublicKey::from_base64(key)
            .map_err(|e| Error::Usage(format!("--trust `{kid}`: {e}")))?;
        out.push((kid.to_string(), key));
    }
    Ok(Some(out))
}

pub fn consumer_options(a: &ConsumerArgs, c: &CommonArgs) -> Result<ConsumerOptions> {
    Ok(ConsumerOptions {
        envelope: read_bytes(&a.envelope)?,
        recipient: a.recipient.clone(),
        at: at(c.at.as_deref())?,
        trust: trust(&a.trust)?,
    })
}

fn open(g: &Global, p: &Printer, a: &OpenArgs) -> Result<Exit> {
    let c = &a.common;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let o = consumer_options(&a.who, c)?;
    let session = bundles::open(&ex, &o).map_err(|e| reject(p, c, e))?;
    if c.json() {
        let mut out = session.handler_input("bundle.consume");
        if let Some(m) = out.as_object_mut() {
            m.remove("capability");
            m.insert("bundle_id".into(), json!(session.bundle_id));
            m.insert(
                "capabilities".into(),
                session.bundle["capabilities"].clone(),
            );
        }
        print_json(p, &out)?;
    } else {
        super::io_result(p.out(&bundles::render_context(&session)))?;
    }
    Ok(Exit::Ok)
}

fn revoke(g: &Global, p: &Printer, a: &RevokeArgs) -> Result<Exit> {
    let c = &a.common;
    let id = if a.bundle.starts_with("urn:cl:bundle:") {
        a.bundle.clone()
    } else {
        let env = read_doc(Path::new(&a.bundle))?;
        env["bundle"]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: not a bundle envelope (no bundle.id)",
                    a.bundle
                ))
            })?
    };
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let r =
        bundles::revoke(&ex, &id, &a.reason, at(c.at.as_deref())?).map_err(|e| reject(p, c, e))?;
    if c.json() {
        print_json(p, &r)?;
    } else {
        super::io_result(p.out(&format!(
            "revoked {id} (receipt {})\n",
            r["id"].as_str().unwrap_or("")
        )))?;
    }
    Ok(Exit::Ok)
}

/// Run the command with the handler input on stdin; its stdout is captured
/// and released only after the completion receipt is durable.
fn run_command(cmd: &[String], input: &Value, out: &mut Vec<u8>) -> ActionResult {
    use std::process::{Command, Stdio};
    let child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "ctx exchange exec: cannot run {}: {e}",
                cmd[0]
            );
            return ActionResult {
                success: false,
                output_digest: canon::digest(&json!({"error": "spawn_failed"})),
            };
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        let text = serde_json::to_vec(input).expect("JSON");
        std::thread::spawn(move || {
            let _ = stdin.write_all(&text);
        });
    }
    match child.wait_with_output() {
        Ok(o) => {
            out.extend_from_slice(&o.stdout);
            let code = o.status.code().unwrap_or(-1);
            let mut h = o.stdout.clone();
            h.extend_from_slice(format!("\nexit:{code}").as_bytes());
            ActionResult {
                success: o.status.success(),
                output_digest: canon::digest_bytes(&h),
            }
        }
        Err(_) => ActionResult {
            success: false,
            output_digest: canon::digest(&json!({"error": "wait_failed"})),
        },
    }
}

fn exec(g: &Global, p: &Printer, a: &ExecArgs) -> Result<Exit> {
    let c = &a.common;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let o = consumer_options(&a.who, c)?;
    let mut output = Vec::new();
    let report = bundles::exec(&ex, &o, &a.action, |input| {
        run_command(&a.command, input, &mut output)
    })
    .map_err(|e| reject(p, c, e))?;
    let (status, receipt, exit) = match &report.outcome {
        ExecOutcome::Success { receipt } => ("success", receipt, Exit::Ok),
        ExecOutcome::Failure { receipt } => ("failure", receipt, Exit::Invalid),
        ExecOutcome::Indeterminate { receipt, error } => {
            let _ = p.err(&format!(
                "INDETERMINATE_OUTCOME: the action ran, but its completion receipt could not be stored ({}: {}).\n  Dependent actions on this bundle are blocked. Fix the receipt store, then run `ctx receipts retry` (pending record: {}).\n",
                error.code,
                error.message,
                report.pending_path.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
            ));
            ("indeterminate", receipt, Exit::Indeterminate)
        }
    };
    super::io_result(p.out(&String::from_utf8_lossy(&output)))?;
    if c.json() {
        print_json(p, &json!({"outcome": status, "receipt": receipt}))?;
    } else {
        let _ = p.err(&format!(
            "{}: {status} (receipt {})\n",
            a.action,
            receipt["id"].as_str().unwrap_or("")
        ));
    }
    Ok(exit)
}

fn policy(g: &Global, p: &Printer, a: &PolicyArgs) -> Result<Exit> {
    let c = &a.common;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let principal = ctx_core::exchange::ops::principal_arg(&a.requester);
    let prepared = ex
        .prepare(&principal, at(c.at.as_deref())?)
        .map_err(|e| reject(p, c, e))?;
    if prepared.requester.is_none() {
        let _ = p.err(&format!("note: {principal} is not listed under extensions.ctx.exchange.requesters; it is granted nothing\n"));
    }
    print_json(
        p,
        &json!({"policy": local::describe(&prepared.policy), "digest": prepared.policy.policy.digest}),
    )?;
    Ok(Exit::Ok)
}

fn keys(p: &Printer, a: &KeysArgs) -> Result<Exit> {
    let pair = ctx_core::keys::load(&a.id, None)?;
    super::io_result(p.out(&format!(
        "{}: {{ ed25519: \"{}\", purpose: {} }}\n",
        a.id,
        pair.public_key().to_base64(),
        a.purpose
    )))?;
    Ok(Exit::Ok)
}

/// One JSON line in, one JSON line out (diagnostics never go to stdout).
fn kit_adapter() -> Result<Exit> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Error::io("<stdin>", &e))?;
    let response = kit::handle_line(&line);
    let mut out = std::io::stdout().lock();
    let text = serde_json::to_string(&response).expect("JSON value") + "\n";
    super::io_result(out.write_all(text.as_bytes()).and_then(|()| out.flush()))?;
    Ok(Exit::Ok)
}
