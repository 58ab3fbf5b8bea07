//! `ctx exchange issue|open|revoke|exec|purge|policy|keys` and the hidden
//! `kit-adapter`: the bundle side of the Context Layer exchange. The helpers
//! every exchange command shares live in [`common`].

mod args;
mod common;
mod exec;

use std::io::{BufRead, Write};
use std::path::Path;

use serde_json::json;

pub use args::*;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::exchange::ops::bundles::{self, ConsumerOptions, IssueOptions};
use ctx_core::exchange::ops::retention;
use ctx_core::exchange::{kit, local};

use super::{Global, Printer};
pub use common::{
    at, cl, emit, exchange, print_json, read_bytes, read_doc, reject, repo, CommonArgs,
};

pub fn run(g: &Global, p: &Printer, a: &ExchangeArgs) -> Result<Exit> {
    match &a.command {
        ExchangeCommand::Issue(x) => issue(g, p, x),
        ExchangeCommand::Open(x) => open(g, p, x),
        ExchangeCommand::Revoke(x) => revoke(g, p, x),
        ExchangeCommand::Exec(x) => exec::run(g, p, x),
        ExchangeCommand::Purge(x) => purge(g, p, x),
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
    let at = at(&g.clock, c.at.as_deref())?;
    let (key, o) = (a.key.clone(), &a.output);
    let issued =
        bundles::issue(&ex, &IssueOptions { decision, key, at }).map_err(|e| reject(g, p, c, e))?;
    emit(p, c, &issued.envelope, o.as_deref())?;
    let b = &issued.envelope["bundle"];
    let (to, until) = (b["recipient"].as_str(), b["expires_at"].as_str());
    let _ = p.err(&format!(
        "issued {} for {} (expires {}); stored {}\n",
        issued.bundle_id,
        to.unwrap_or(""),
        until.unwrap_or(""),
        issued.path.display()
    ));
    Ok(Exit::Ok)
}

pub fn consumer_options(g: &Global, a: &ConsumerArgs, c: &CommonArgs) -> Result<ConsumerOptions> {
    Ok(ConsumerOptions {
        envelope: read_bytes(&a.envelope)?,
        recipient: a.recipient.clone(),
        at: at(&g.clock, c.at.as_deref())?,
        trust: bundles::parse_trust(&a.trust).map_err(common::cl)?,
    })
}

fn open(g: &Global, p: &Printer, a: &OpenArgs) -> Result<Exit> {
    let c = &a.common;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let session =
        bundles::open(&ex, &consumer_options(g, &a.who, c)?).map_err(|e| reject(g, p, c, e))?;
    if c.json() {
        print_json(p, &bundles::opened_document(&session))?;
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
        let id = env["bundle"]["id"].as_str().map(str::to_string);
        id.ok_or_else(|| {
            Error::Invalid(format!(
                "{}: not a bundle envelope (no bundle.id)",
                a.bundle
            ))
        })?
    };
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let r = bundles::revoke(&ex, &id, &a.reason, at(&g.clock, c.at.as_deref())?)
        .map_err(|e| reject(g, p, c, e))?;
    if c.json() {
        return print_json(p, &r).map(|()| Exit::Ok);
    }
    let receipt = r["id"].as_str().unwrap_or("");
    super::io_result(p.out(&format!("revoked {id} (receipt {receipt})\n")))?;
    Ok(Exit::Ok)
}

fn purge(g: &Global, p: &Printer, a: &PurgeArgs) -> Result<Exit> {
    let c = &a.common;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let report =
        retention::purge(&ex, at(&g.clock, c.at.as_deref())?).map_err(|e| reject(g, p, c, e))?;
    if c.json() {
        return print_json(p, &json!(report)).map(|()| Exit::Ok);
    }
    let mut text = String::new();
    for (id, why) in &report.purged {
        text.push_str(&format!(
            "purged {id} ({})\n",
            json!(why).as_str().unwrap_or("")
        ));
    }
    text.push_str(&format!(
        "{} purged, {} still usable\n",
        report.purged.len(),
        report.kept
    ));
    super::io_result(p.out(&text))?;
    Ok(Exit::Ok)
}

fn policy(g: &Global, p: &Printer, a: &PolicyArgs) -> Result<Exit> {
    let c = &a.common;
    let repo = repo(g)?;
    let ex = exchange(g, &repo, c)?;
    let principal = ctx_core::exchange::ops::principal_arg(&a.requester);
    let prepared = ex
        .prepare(&principal, at(&g.clock, c.at.as_deref())?)
        .map_err(|e| reject(g, p, c, e))?;
    if prepared.requester.is_none() {
        let _ = p.err(&format!("note: {principal} is not listed under extensions.ctx.exchange.requesters; it is granted nothing\n"));
    }
    let policy = &prepared.policy;
    print_json(
        p,
        &json!({"policy": local::describe(policy), "digest": policy.policy.digest}),
    )?;
    Ok(Exit::Ok)
}

fn keys(p: &Printer, a: &KeysArgs) -> Result<Exit> {
    let public = ctx_core::keys::load(&a.id, None)?.public_key().to_base64();
    let line = format!(
        "{}: {{ ed25519: \"{public}\", purpose: {} }}\n",
        a.id, a.purpose
    );
    super::io_result(p.out(&line))?;
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
