//! Verification with nothing but the repository: bundle digests recompute,
//! receipts carry a valid signature by a key the manifest declares
//! (`ctx.keys`), each receipt describes exactly its bundle, and decision
//! records cite bundles that are stored and intact.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::canonical;
use crate::error::Result;
use crate::keys::{self, MalformedKey, Trusted};
use crate::load::Repo;
use crate::manifest::Manifest;
use crate::receipt::{self, store, Problem, Store};

/// What to verify. Relative paths are taken from `cwd`.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    pub cwd: PathBuf,
    /// Bundle (JSON) or receipt files, as the user named them.
    pub files: Vec<PathBuf>,
    /// Receipt folder (default: `.ctx/receipts`).
    pub receipts: Option<PathBuf>,
    /// Folder of stored bundles, found by `bundle_id` (default: `.ctx/bundles`).
    pub bundles: Option<PathBuf>,
    /// The bundle a receipt describes, instead of searching `bundles`.
    pub bundle: Option<PathBuf>,
    /// For bundles: recompute the digest only; no receipt required.
    pub digest_only: bool,
}

/// The verdict on one input.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The input as named (a path, or `id (file)` for a decision).
    pub file: String,
    /// `bundle`, `receipt`, `decision`, `decisions` or `unknown`.
    pub kind: &'static str,
    pub problems: Vec<Problem>,
    /// What was checked and held, one line each.
    pub details: Vec<String>,
}

impl Outcome {
    fn new(file: String, kind: &'static str) -> Self {
        Self {
            file,
            kind,
            problems: Vec::new(),
            details: Vec::new(),
        }
    }

    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "file": self.file,
            "kind": self.kind,
            "ok": self.ok(),
            "problems": self.problems.iter().map(|p| json!({"field": p.field, "expected": p.expected, "actual": p.actual})).collect::<Vec<_>>(),
            "details": self.details,
        })
    }
}

/// Every verdict, plus the declared keys that are malformed.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub results: Vec<Outcome>,
    pub malformed_keys: Vec<MalformedKey>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.results.iter().all(Outcome::ok)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "ok": self.ok(),
            "results": self.results.iter().map(Outcome::to_json).collect::<Vec<_>>(),
            "key_errors": self.malformed_keys.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "malformed_keys": self.malformed_keys.iter().map(|k| json!({
                "id": k.id, "file": k.file, "field": k.field, "expected": k.expected, "actual": k.actual,
            })).collect::<Vec<_>>(),
        })
    }
}

struct Ctx<'a> {
    m: &'a Manifest,
    trusted: Trusted,
    receipts: Store,
    bundles: PathBuf,
    opts: &'a VerifyOptions,
}

impl Ctx<'_> {
    fn abs(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.opts.cwd.join(p)
        }
    }

    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.m.root)
            .or_else(|_| p.strip_prefix(&self.opts.cwd))
            .unwrap_or(p)
            .display()
            .to_string()
    }
}

/// Verify each file of `opts` (a missing file is `NotFound`).
pub fn verify_files(m: &Manifest, opts: &VerifyOptions) -> Result<Report> {
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            opts.cwd.join(p)
        }
    };
    let c = Ctx {
        m,
        trusted: keys::trusted(m),
        receipts: Store::new(
            opts.receipts
                .as_deref()
                .map(abs)
                .unwrap_or_else(|| receipt::default_dir(&m.root)),
        ),
        bundles: opts
            .bundles
            .as_deref()
            .map(abs)
            .unwrap_or_else(|| m.root.join(".ctx").join("bundles")),
        opts,
    };
    let mut results = Vec::new();
    for f in &opts.files {
        let path = c.abs(f);
        let shown = f.display().to_string();
        let (bytes, doc) = match receipt::read_json(&path) {
            Ok(x) => x,
            Err(e @ receipt::ReceiptError::NoFile { .. }) => return Err(e.into()),
            Err(e) => {
                let mut o = Outcome::new(shown, "unknown");
                o.problems.push(Problem::new(
                    "file",
                    "strict JSON (no duplicate keys)",
                    e.to_string(),
                ));
                results.push(o);
                continue;
            }
        };
        let o = if doc.get("type").and_then(Value::as_str) == Some("receipt") {
            verify_receipt(&c, shown, &doc)
        } else if doc.get("bundle_id").is_some() && doc.get("opencontext").is_some() {
            verify_bundle(&c, shown, &bytes, &doc)
        } else {
            let mut o = Outcome::new(shown, "unknown");
            o.problems.push(Problem::new(
                "file",
                "a Context Bundle or a ctx receipt",
                "another JSON document",
            ));
            o
        };
        results.push(o);
    }
    Ok(Report {
        results,
        malformed_keys: c.trusted.malformed,
    })
}

fn verify_bundle(c: &Ctx<'_>, shown: String, bytes: &[u8], b: &Value) -> Outcome {
    let mut o = Outcome::new(shown, "bundle");
    let digest = match receipt::check_bundle(b) {
        Ok(d) => d,
        Err(p) => {
            o.problems.push(p);
            return o;
        }
    };
    let id = b["bundle_id"].as_str().unwrap_or("").to_string();
    o.details
        .push(format!("bundle {id}: digest {digest} recomputes"));
    if c.opts.digest_only {
        return o;
    }
    let all = match c.receipts.all() {
        Ok(r) => r,
        Err(e) => {
            o.problems.push(Problem::new(
                "receipts",
                "a readable receipt store",
                e.to_string(),
            ));
            return o;
        }
    };
    let by = store::supersessions(&all).unwrap_or_else(|e| {
        o.problems.push(Problem::new(
            "receipts",
            "corrections that form chains",
            e.to_string(),
        ));
        Default::default()
    });
    let ids: BTreeSet<&str> = all.iter().filter_map(|(_, r)| r["id"].as_str()).collect();
    let mine: Vec<&(PathBuf, Value)> = all
        .iter()
        .filter(|(_, r)| r["bundle_ref"].as_str() == Some(id.as_str()))
        .collect();
    let mut linked = 0;
    let mut mismatch = None;
    for (path, r) in mine.iter().copied() {
        let name = c.rel(path);
        let v = match receipt::verify_trusted(r, &c.trusted) {
            Ok(v) => v,
            Err(p) => {
                o.problems.push(Problem::new(
                    &format!("{name} {}", p.field),
                    p.expected,
                    p.actual,
                ));
                continue;
            }
        };
        if let Err(p) = receipt::check_link(r, b) {
            o.details.push(format!(
                "receipt {} ({name}) is for another compilation of this content",
                v.id
            ));
            mismatch.get_or_insert(Problem::new(
                &format!("{name} → {}", p.field),
                p.expected,
                p.actual,
            ));
            continue;
        }
        linked += 1;
        let state = by
            .get(&v.id)
            .map_or("current".to_string(), |x| format!("superseded by {x}"));
        o.details.push(format!(
            "receipt {} ({name}) signed by `{}` ({}) describes this file, {state}",
            v.id,
            v.key_id,
            c.trusted.keys[&v.key_id].fingerprint()
        ));
        match receipt::same_rendering(r, bytes) {
            Some(true) => o.details.push(format!("{name}: the file is byte-for-byte the signed rendering")),
            Some(false) => o.details.push(format!("{name}: same content, but the bytes differ from the signed rendering (re-serialised or another format)")),
            None => {}
        }
        if let Some(prev) = v.supersedes.as_deref().filter(|p| !ids.contains(p)) {
            o.problems.push(Problem::new(
                &format!("{name} supersedes"),
                "a receipt in the store",
                prev,
            ));
        }
        if v.policy_snapshot != canonical::digest(c.m.text.as_bytes()) {
            o.details.push(format!(
                "note: {} changed since {} was signed (policy_snapshot differs)",
                c.m.file, v.id
            ));
        }
    }
    if mine.is_empty() {
        o.problems.push(Problem::new(
            "receipt",
            format!("a signed receipt for {id} in {}", c.rel(c.receipts.dir())),
            "none (sign with `ctx bundle --sign`, or pass --digest-only)",
        ));
    } else if linked == 0 {
        o.problems.push(mismatch.unwrap_or_else(|| {
            Problem::new(
                "receipt",
                format!("a valid receipt for {id}"),
                "none verifies",
            )
        }));
    }
    o
}

fn verify_receipt(c: &Ctx<'_>, shown: String, r: &Value) -> Outcome {
    let mut o = Outcome::new(shown, "receipt");
    let v = match receipt::verify_trusted(r, &c.trusted) {
        Ok(v) => v,
        Err(p) => {
            o.problems.push(p);
            return o;
        }
    };
    o.details.push(format!(
        "receipt {}: signature by `{}` ({}) verifies",
        v.id,
        v.key_id,
        c.trusted.keys[&v.key_id].fingerprint()
    ));
    let found = match &c.opts.bundle {
        Some(file) => {
            let file = c.abs(file);
            receipt::read_json(&file).map(|(_, b)| Some((file, b)))
        }
        None => find_bundle(&c.bundles, &v.bundle_ref),
    };
    match found {
        Ok(Some((path, b))) => {
            if let Err(p) = receipt::check_bundle(&b).and_then(|_| receipt::check_link(r, &b)) {
                o.problems.push(Problem::new(
                    &format!("{} {}", c.rel(&path), p.field),
                    p.expected,
                    p.actual,
                ));
            } else {
                o.details.push(format!(
                    "links to bundle {} ({}) whose digest {} recomputes",
                    v.bundle_ref,
                    c.rel(&path),
                    v.output_digest
                ));
            }
        }
        Ok(None) => o.problems.push(Problem::new(
            "bundle_ref",
            format!(
                "bundle {} in {} to check the receipt against",
                v.bundle_ref,
                c.rel(&c.bundles)
            ),
            "no such bundle (pass --bundle FILE or --bundles DIR)",
        )),
        Err(e) => o
            .problems
            .push(Problem::new("bundle", "a readable bundle", e.to_string())),
    }
    if let Ok(all) = c.receipts.all() {
        if let Some((p, x)) = all
            .iter()
            .find(|(_, x)| x.get("supersedes").and_then(Value::as_str) == Some(&v.id))
        {
            o.details.push(format!(
                "note: superseded by {} ({})",
                x["id"].as_str().unwrap_or(""),
                c.rel(p)
            ));
        }
    }
    o
}

/// The bundle with `bundle_id` among the `*.json` files of `dir`.
fn find_bundle(
    dir: &Path,
    bundle_id: &str,
) -> std::result::Result<Option<(PathBuf, Value)>, receipt::ReceiptError> {
    for (path, v) in Store::new(dir).scan()? {
        if let Ok(v) = v {
            if v.get("bundle_id").and_then(Value::as_str) == Some(bundle_id)
                && v.get("opencontext").is_some()
            {
                return Ok(Some((path, v)));
            }
        }
    }
    Ok(None)
}

/// Each `type: decision` object citing a bundle: the bundle is stored in
/// `dir`, its own digest recomputes, and it is the digest the decision cites.
pub fn verify_decisions(repo: &Repo, dir: &Path) -> Vec<Outcome> {
    let root = &repo.manifest.root;
    let shown = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut out = Vec::new();
    for o in repo.objects.iter().filter(|o| o.kind() == "decision") {
        let Some(cited) = o.field("bundle") else {
            continue;
        };
        let mut res = Outcome::new(format!("{} ({})", o.id, o.origin.file), "decision");
        let id = cited.get("bundle_id").and_then(Value::as_str).unwrap_or("");
        let digest = cited.get("digest").and_then(Value::as_str).unwrap_or("");
        match find_bundle(dir, id) {
            Ok(Some((path, b))) => match receipt::check_bundle(&b) {
                Ok(actual) if actual == digest => res.details.push(format!(
                    "cites bundle {id} ({}) with digest {digest}: matches",
                    shown(&path)
                )),
                Ok(actual) => res
                    .problems
                    .push(Problem::new("bundle.digest", actual, digest)),
                Err(p) => res.problems.push(Problem::new(
                    &format!("{} {}", shown(&path), p.field),
                    p.expected,
                    p.actual,
                )),
            },
            Ok(None) => res.problems.push(Problem::new(
                "bundle.bundle_id",
                format!("a bundle {id} stored in {}", dir.display()),
                "not found",
            )),
            Err(e) => {
                res.problems
                    .push(Problem::new("bundles", "a readable folder", e.to_string()))
            }
        }
        out.push(res);
    }
    if out.is_empty() {
        let mut o = Outcome::new(dir.display().to_string(), "decisions");
        o.details.push("no decision record cites a bundle".into());
        out.push(o);
    }
    out
}
