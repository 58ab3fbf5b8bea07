//! Handing a compiled bundle out with its evidence: the receipt (when `--sign`
//! or the manifest's policy asks) and the audit events are prepared before the
//! product exists, and committed with it, so evidence never disagrees with
//! output. Every door delivers through here; none records a disclosure itself.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::error::Result;
use crate::evidence::bundle::{self, Emission, ReceiptWritten, RequestEcho, SignOptions};
use crate::evidence::record::Pending;
use crate::evidence::{BundleEvent, Record, Recorder};
use crate::manifest::Manifest;

use super::Disclosure;

/// How a bundle leaves: which event it is, in which rendering, and whether a
/// receipt is asked for.
#[derive(Debug, Clone)]
pub struct Delivery<'a> {
    pub event: BundleEvent,
    /// `json`, `yaml`, `markdown`, `explain` or `explain-data`.
    pub format: &'a str,
    pub started_at: &'a str,
    pub sign: SignOptions,
}

/// Writes a product into the staged file of a [`Sink::File`].
pub type Fill<'a> = Box<dyn FnOnce(&mut dyn Write) -> std::io::Result<()> + 'a>;

/// Where the product goes.
pub enum Sink<'a> {
    /// Printed, or returned to a client: it cannot be staged, so the evidence is
    /// committed first and `emit` runs right after.
    Stream(Box<dyn FnOnce() -> Result<()> + 'a>),
    /// A file: `fill` writes a staged copy beside `path`, the evidence is
    /// committed, then the copy is renamed into place.
    File { path: &'a Path, fill: Fill<'a> },
}

/// Will delivering carry a signed receipt? Then the caller renders the product to
/// bytes first, so the receipt signs exactly them.
pub fn receipt_due(m: &Manifest, sign: &SignOptions) -> bool {
    bundle::receipt_due(m, sign)
}

impl Disclosure {
    /// Deliver `compiled` (this disclosure's bundle) to `sink` with its evidence.
    /// `bytes` is the exact rendering, required when a receipt is due.
    pub fn deliver(
        &self,
        m: &Manifest,
        compiled: &Value,
        d: &Delivery<'_>,
        bytes: Option<&[u8]>,
        sink: Sink<'_>,
    ) -> Result<Option<ReceiptWritten>> {
        let a = &self.ask;
        let emission = Emission {
            event: d.event,
            bundle: compiled,
            request: RequestEcho {
                include_historical: a.include_historical,
                limit: a.limit,
                min_relevance: a.min_relevance,
                include: &a.include,
                max_tokens: a.max_tokens,
            },
            format: d.format,
            started_at: d.started_at,
        };
        let prepared = bundle::prepare(m, &d.sign, &emission, bytes)?;
        match sink {
            Sink::Stream(emit) => {
                let written = prepared.commit()?;
                emit()?;
                Ok(written)
            }
            Sink::File { path, fill } => prepared.commit_with_file(path, fill),
        }
    }
}

/// Evidence for a bundle a door stores before handing it over (the Context Layer
/// stores its envelope, then commits): the audit events are checked and held now,
/// committed by the caller once the product is in place.
pub fn stage_bundle(m: &Manifest, event: BundleEvent, compiled: &Value) -> Result<Pending> {
    Recorder::open(m)?.begin(&Record::bundle(event, compiled), &crate::evidence::now())
}
