//! Receipt queries: which receipt speaks for a bundle.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::keys;
use crate::manifest::Manifest;

use super::{check_link, default_dir, read_json, store, verify_trusted, ReceiptError, Store};

/// The newest uncorrected receipt in `store` made for exactly this bundle
/// file (id, digest and pinned volatile members all match).
pub fn current_for_bundle(store: &Store, bundle: &Value) -> Result<Option<Value>, ReceiptError> {
    let all = store.all()?;
    let by = store::supersessions(&all)?;
    Ok(all
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| check_link(r, bundle).is_ok())
        .filter(|r| !by.contains_key(r["id"].as_str().unwrap_or("")))
        .max_by(|x, y| x["completed_at"].as_str().cmp(&y["completed_at"].as_str())))
}

/// Where the receipt to cite comes from.
#[derive(Debug, Clone, Copy, Default)]
pub struct CiteOptions<'a> {
    /// An explicit receipt file.
    pub receipt_file: Option<&'a Path>,
    /// The bundle the receipt must name (and, without a file, be found for).
    pub bundle: Option<&'a Value>,
    /// The repository, when there is one: its store is searched and its
    /// `ctx.keys` must verify the receipt.
    pub manifest: Option<&'a Manifest>,
}

/// The receipt a delegated-provider envelope cites: the given file, else
/// the bundle's current receipt in the repository store. It must be a ctx
/// receipt, name the bundle, and (inside a repository) verify under the
/// manifest's keys.
pub fn cited(o: CiteOptions<'_>) -> Result<Value> {
    let bundle_id = o.bundle.and_then(|b| b["bundle_id"].as_str());
    let r = match (o.receipt_file, o.bundle, o.manifest) {
        (Some(f), _, _) => read_json(f)?.1,
        (None, Some(b), Some(m)) => {
            let store = Store::new(default_dir(&m.root));
            current_for_bundle(&store, b)?.ok_or_else(|| ReceiptError::NoneForBundle {
                bundle: bundle_id.unwrap_or("").to_string(),
                dir: store.dir().to_path_buf(),
            })?
        }
        _ => {
            return Err(Error::Usage(
                "an envelope must cite a receipt: pass --receipt FILE (or --bundle inside a repository with a signed receipt)".into(),
            ))
        }
    };
    if r.get("type").and_then(Value::as_str) != Some("receipt") {
        return Err(Error::Invalid(
            "--receipt: not a ctx receipt (type is not \"receipt\")".into(),
        ));
    }
    if let Some(id) = bundle_id {
        let names = r.get("bundle_ref").and_then(Value::as_str);
        if names != Some(id) {
            return Err(Error::Invalid(format!(
                "the receipt names bundle {}, not {id}",
                names.unwrap_or("(none)")
            )));
        }
    }
    if let Some(m) = o.manifest {
        verify_trusted(&r, &keys::trusted(m))
            .map_err(|e| Error::Invalid(format!("the cited receipt does not verify: {e}")))?;
    }
    Ok(r)
}
