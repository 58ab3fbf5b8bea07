//! The evidence of a compiled bundle: its audit events (when the manifest's
//! `audit` block asks) and a signed receipt over the exact bytes emitted
//! (when `--sign` or `extensions.ctx.policy.require_receipts` asks).
//!
//! Two steps, so that evidence and product stay consistent:
//!
//! 1. [`prepare`] before anything is written: find a usable signing key
//!    (a required receipt without one refuses the command, and that refusal
//!    is audited as an `error` outcome), check the receipt's destination,
//!    lock the audit log and verify its chain, and sign the receipt in
//!    memory over the rendering about to be emitted.
//! 2. [`Prepared::commit_with_file`] for a file: product, receipt and
//!    events are one transaction ([`crate::fs::txn`]). The product and the
//!    receipt file are staged and synced, a journal is written, the product
//!    is renamed into place first, then the receipt, then the events are
//!    appended. Nothing is recorded before the product is in place, and a
//!    kill after the journal leaves a state the next writer completes (the
//!    product, its receipt, its events); a kill before it leaves the old
//!    state and staged files the next run sweeps (`.ctx/tmp/`, ignored by
//!    git: the staged product never shows up as a stray file beside the
//!    destination). [`Prepared::commit`] for a stream: the receipt and the
//!    events, committed right before the product is printed (a stream
//!    cannot be staged).
//!
//! What is left: an audit append that fails after the product is in place
//! (a full disk) is reported, and its events are appended by the next write.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::fs::txn::{Txn, TxnError};
use crate::keys;
use crate::manifest::Manifest;
use crate::receipt::{self, Draft, ReceiptError, Store};
use crate::signing::SigningKeyPair;

use super::record::{BundleEvent, Pending, Record, Recorder};

/// What the user asked for about receipts (`--sign`, `--key`, `--receipt`,
/// `--supersedes`).
#[derive(Debug, Clone, Default)]
pub struct SignOptions {
    pub sign: bool,
    /// Key id to sign with (default: the only declared key present here).
    pub key: Option<String>,
    /// Write the receipt to this new file instead of the receipt store.
    pub receipt_file: Option<PathBuf>,
    /// The earlier receipt id this receipt corrects.
    pub supersedes: Option<String>,
}

/// The request parameters a receipt's `input_digest` covers (besides what
/// the bundle itself records: namespace, consumer, task, as_of).
#[derive(Debug, Clone, Default)]
pub struct RequestEcho<'a> {
    pub include_historical: bool,
    pub limit: Option<usize>,
    pub min_relevance: Option<f64>,
    pub include: &'a [String],
    /// The token budget (covered only when set, so receipts without one are unchanged).
    pub max_tokens: Option<usize>,
}

/// One emission of a compiled bundle.
#[derive(Debug, Clone)]
pub struct Emission<'a> {
    pub event: BundleEvent,
    pub bundle: &'a Value,
    pub request: RequestEcho<'a>,
    /// The rendering handed out: `json`, `yaml`, `markdown`, `explain` or
    /// `explain-data` (recorded in the receipt with the bytes' SHA-256).
    pub format: &'a str,
    pub started_at: &'a str,
}

/// `extensions: ctx.policy: { require_receipts: true }`.
pub fn receipts_required(m: &Manifest) -> bool {
    m.extension("ctx.policy")
        .and_then(|p| p.get("require_receipts"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Will this emission carry a signed receipt? (Then the caller must render
/// the product to bytes, so the receipt can sign exactly them.)
pub fn receipt_due(m: &Manifest, opts: &SignOptions) -> bool {
    opts.sign || receipts_required(m)
}

/// A receipt signed in memory, not yet stored.
#[derive(Debug)]
struct Signed {
    receipt: Value,
    key_id: String,
    /// `None`: the repository's receipt store.
    file: Option<PathBuf>,
    root: PathBuf,
    why: &'static str,
}

/// Evidence ready to be committed with its product (holds the audit lock).
#[derive(Debug)]
pub struct Prepared {
    pending: Pending,
    receipt: Option<Signed>,
    root: PathBuf,
}

/// A stored receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptWritten {
    pub path: PathBuf,
    pub id: String,
    pub key_id: String,
    pub supersedes: Option<String>,
}

/// Step 1: everything that can refuse, before the product exists.
/// `product` is the exact rendering; it is required when a receipt is due.
pub fn prepare(
    m: &Manifest,
    opts: &SignOptions,
    e: &Emission<'_>,
    product: Option<&[u8]>,
) -> Result<Prepared> {
    let recorder = Recorder::open(m)?;
    let due = receipt_due(m, opts);
    let why = if opts.sign {
        "--sign"
    } else {
        "extensions.ctx.policy.require_receipts"
    };
    let key: Option<(String, SigningKeyPair)> = if due {
        match keys::signing_key(m, opts.key.as_deref()) {
            Ok(k) => Some(k),
            Err(err) => {
                // The refusal itself is evidence: audited as an error, nothing emitted.
                let refusal = Record::Bundle {
                    event: e.event,
                    bundle: e.bundle,
                    refused: Some(format!(
                        "nothing emitted: a receipt is required ({why}) and no signing key is usable"
                    )),
                };
                recorder.record(&refusal, &super::now())?;
                return Err(refused(&format!("a receipt ({why})"), &err));
            }
        }
    } else {
        None
    };
    if let Some(file) = &opts.receipt_file {
        check_new_file(file).map_err(|err| refused(&format!("a receipt ({why})"), &err))?;
    }
    let pending = recorder.begin(&Record::bundle(e.event, e.bundle), &super::now())?;
    let receipt = match key {
        None => None,
        Some((key_id, pair)) => {
            let bytes = product.ok_or_else(|| {
                Error::Invalid("a receipt is due but the product was not rendered".into())
            })?;
            let request = request_json(m, e);
            let draft = Draft {
                operation: e.event.name(),
                bundle: e.bundle,
                started_at: e.started_at.to_string(),
                completed_at: super::now(),
                manifest_bytes: m.text.as_bytes(),
                request: &request,
                rendering: Some((e.format, bytes)),
                supersedes: opts.supersedes.clone(),
            };
            let r = receipt::sign(&draft, &key_id, &pair)
                .map_err(|err| refused(&format!("a receipt ({why})"), &Error::from(err)))?;
            Some(Signed {
                receipt: r,
                key_id,
                file: opts.receipt_file.clone(),
                root: m.root.clone(),
                why,
            })
        }
    };
    Ok(Prepared {
        pending,
        receipt,
        root: m.root.clone(),
    })
}

impl Prepared {
    /// Step 2 for a product written to `path`: `fill` writes it to a staged
    /// file, and the product, its receipt and its events are committed as one
    /// transaction, product first. The file keeps the mode of the one it
    /// replaces.
    pub fn commit_with_file(
        self,
        path: &Path,
        fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<Option<ReceiptWritten>> {
        let mut txn = Txn::new(&self.root);
        txn.put_with(path, crate::fs::Mode::Preserve, fill)
            .map_err(|e| match e {
                TxnError::Io { path, source } => Error::io(&path, &source),
                other => Error::Invalid(other.to_string()),
            })?;
        self.commit_in(txn)
    }

    /// Step 2 for a stream: store the receipt, then append the audit events.
    /// Call it right before the product is streamed.
    pub fn commit(self) -> Result<Option<ReceiptWritten>> {
        let txn = Txn::new(&self.root);
        self.commit_in(txn)
    }

    fn commit_in(self, mut txn: Txn) -> Result<Option<ReceiptWritten>> {
        let (written, placed) = match &self.receipt {
            None => (None, None),
            Some(s) => {
                let (w, placed) = s
                    .stage(&mut txn)
                    .map_err(|err| refused(&format!("a receipt ({})", s.why), &Error::from(err)))?;
                (Some(w), placed)
            }
        };
        let what = match &self.receipt {
            Some(s) => format!("a receipt ({})", s.why),
            None => "an audit event".into(),
        };
        let done = txn.commit(self.pending);
        drop(placed);
        done.map_err(|e| match e {
            TxnError::Evidence(err) => Error::Invalid(format!(
                "the output and its receipt were written, but an audit event could not be recorded yet (the next write records it): {err}"
            )),
            other => refused(&what, &Error::Invalid(other.to_string())),
        })?;
        Ok(written)
    }
}

impl Signed {
    /// Stage the receipt's file into `txn` (a file chosen in the store under
    /// its lock, which the returned guard holds until the commit).
    fn stage(
        &self,
        txn: &mut Txn,
    ) -> std::result::Result<(ReceiptWritten, Option<receipt::store::Placed>), ReceiptError> {
        let bytes = receipt::to_pretty(&self.receipt);
        let (path, placed) = match &self.file {
            Some(file) => (file.clone(), None),
            None => {
                let placed = Store::new(receipt::default_dir(&self.root)).place(&self.receipt)?;
                (placed.path.clone(), Some(placed))
            }
        };
        txn.create(&path, bytes.as_bytes(), crate::fs::Mode::RepositoryDefault)
            .map_err(|e| {
                ReceiptError::file(
                    &path,
                    match e {
                        TxnError::Io { source, .. } => source,
                        other => std::io::Error::other(other.to_string()),
                    },
                )
            })?;
        let s = |k: &str| {
            self.receipt
                .get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Ok((
            ReceiptWritten {
                path,
                id: s("id").unwrap_or_default(),
                key_id: self.key_id.clone(),
                supersedes: s("supersedes"),
            },
            placed,
        ))
    }
}

/// The parameters whose digest becomes the receipt's `input_digest`.
fn request_json(m: &Manifest, e: &Emission<'_>) -> Value {
    let b = e.bundle;
    let mut v = json!({
        "namespace": m.id,
        "consumer": b["consumer"],
        "task": b.get("task"),
        "as_of": b["as_of"],
        "include_historical": e.request.include_historical,
        "limit": e.request.limit,
        "min_relevance": e.request.min_relevance.map(|x| x.to_string()),
        "include": e.request.include,
    });
    if let Some(n) = e.request.max_tokens {
        v["max_tokens"] = Value::from(n);
    }
    v
}

/// A receipt file must be new and its folder must exist: checked before
/// anything is recorded.
fn check_new_file(file: &Path) -> Result<()> {
    if file.exists() {
        return Err(Error::Invalid(format!(
            "{}: already exists; receipts are never overwritten",
            file.display()
        )));
    }
    match file.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(Error::Invalid(format!(
            "{}: the folder {} does not exist",
            file.display(),
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// The cause's hint survives the wrapping.
fn refused(what: &str, e: &Error) -> Error {
    Error::Refused {
        message: format!(
            "{what} is required but could not be written, so no output was emitted: {e}"
        ),
        findings: Vec::new(),
        help: e.help(),
        exit: e.exit(),
    }
}
