//! `ctx verify`: check bundles, receipts and decision records with nothing
//! but the repository — bundle digests recompute, receipts carry a valid
//! signature by a key the manifest declares (`ctx.keys`), each receipt
//! describes exactly its bundle, and decisions cite stored bundles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{json, Value};

use ctx_core::canonical;
use ctx_core::error::{Error, Exit, Result};
use ctx_core::keys;
use ctx_core::manifest::Manifest;
use ctx_core::receipt::{self, store, Problem, Store};
use ctx_core::signing::PublicKey;

use super::{Global, Printer};

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Bundle (JSON) or receipt files to verify.
    pub files: Vec<PathBuf>,
    /// Receipt folder (default: .ctx/receipts in the repository).
    #[arg(long, value_name = "DIR")]
    pub receipts: Option<PathBuf>,
    /// Folder of stored bundles, found by bundle_id (default: .ctx/bundles).
    #[arg(long, value_name = "DIR")]
    pub bundles: Option<PathBuf>,
    /// The bundle a receipt describes (instead of searching --bundles).
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<PathBuf>,
    /// Check that every decision record's cited bundle digest matches a bundle stored in DIR.
    #[arg(long, value_name = "DIR")]
    pub decisions: Option<PathBuf>,
    /// For bundles: only recompute the digest; do not require a signed receipt.
    #[arg(long)]
    pub digest_only: bool,
    /// Output format.
    #[arg(long, default_value = "human", value_parser = ["human", "json"])]
    pub format: String,
}

/// The verdict on one input.
struct Outcome {
    file: String,
    kind: &'static str,
    problems: Vec<Problem>,
    lines: Vec<String>,
}

impl Outcome {
    fn new(file: String, kind: &'static str) -> Self {
        Self {
            file,
            kind,
            problems: Vec::new(),
            lines: Vec::new(),
        }
    }
    fn to_json(&self) -> Value {
        json!({
            "file": self.file,
            "kind": self.kind,
            "ok": self.problems.is_empty(),
            "problems": self.problems.iter().map(|p| json!({"field": p.field, "expected": p.expected, "actual": p.actual})).collect::<Vec<_>>(),
            "details": self.lines,
        })
    }
}

struct Ctx<'a> {
    m: &'a Manifest,
    trusted: BTreeMap<String, PublicKey>,
    receipts: Store,
    bundles: PathBuf,
    g: &'a Global,
}

pub fn run(g: &Global, p: &Printer, a: &VerifyArgs) -> Result<Exit> {
    if a.files.is_empty() && a.decisions.is_none() {
        return Err(Error::Usage(
            "give bundle or receipt files to verify, or --decisions DIR".into(),
        ));
    }
    let (m, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let (trusted, key_errors) = keys::declared(&m);
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            g.cwd.join(p)
        }
    };
    let c = Ctx {
        m: &m,
        trusted,
        receipts: Store::new(
            a.receipts
                .as_deref()
                .map(abs)
                .unwrap_or_else(|| receipt::default_dir(&m.root)),
        ),
        bundles: a
            .bundles
            .as_deref()
            .map(abs)
            .unwrap_or_else(|| m.root.join(".ctx").join("bundles")),
        g,
    };
    let mut out = Vec::new();
    for f in &a.files {
        let path = abs(f);
        let (bytes, doc) = match receipt::read_json(&path) {
            Ok(x) => x,
            Err(e) if !path.exists() => return Err(Error::NotFound(e)),
            Err(e) => {
                let mut o = Outcome::new(f.display().to_string(), "unknown");
                o.problems
                    .push(Problem::new("file", "strict JSON (no duplicate keys)", e));
                out.push(o);
                continue;
            }
        };
        let o = if doc.get("type").and_then(Value::as_str) == Some("receipt") {
            verify_receipt(&c, f, &doc, a)
        } else if doc.get("bundle_id").is_some() && doc.get("opencontext").is_some() {
            verify_bundle(&c, f, &bytes, &doc, a.digest_only)
        } else {
            let mut o = Outcome::new(f.display().to_string(), "unknown");
            o.problems.push(Problem::new(
                "file",
                "a Context Bundle or a ctx receipt",
                "another JSON document",
            ));
            o
        };
        out.push(o);
    }
    if let Some(dir) = &a.decisions {
        out.extend(verify_decisions(g, &abs(dir))?);
    }
    let ok = out.iter().all(|o| o.problems.is_empty());
    let text = if a.format == "json" {
        let doc = json!({"ok": ok, "results": out.iter().map(Outcome::to_json).collect::<Vec<_>>(), "key_errors": key_errors});
        serde_json::to_string_pretty(&doc).expect("JSON") + "\n"
    } else {
        let mut s = String::new();
        for o in &out {
            let mark = if o.problems.is_empty() { "✓" } else { "✗" };
            s.push_str(&format!("{mark} {} ({})\n", o.file, o.kind));
            for l in &o.lines {
                s.push_str(&format!("  {l}\n"));
            }
            for p in &o.problems {
                s.push_str(&format!("  error: {p}\n"));
            }
        }
        for e in &key_errors {
            s.push_str(&format!("warning: {e}\n"));
        }
        s.push_str(if ok {
            "verified\n"
        } else {
            "verification FAILED\n"
        });
        s
    };
    super::io_result(p.out(&text))?;
    Ok(if ok { Exit::Ok } else { Exit::Invalid })
}

fn rel(c: &Ctx<'_>, p: &Path) -> String {
    p.strip_prefix(&c.m.root)
        .or_else(|_| p.strip_prefix(&c.g.cwd))
        .unwrap_or(p)
        .display()
        .to_string()
}

fn verify_bundle(c: &Ctx<'_>, f: &Path, bytes: &[u8], b: &Value, digest_only: bool) -> Outcome {
    let mut o = Outcome::new(f.display().to_string(), "bundle");
    let digest = match receipt::check_bundle(b) {
        Ok(d) => d,
        Err(p) => {
            o.problems.push(p);
            return o;
        }
    };
    let id = b["bundle_id"].as_str().unwrap_or("").to_string();
    o.lines
        .push(format!("bundle {id}: digest {digest} recomputes"));
    if digest_only {
        return o;
    }
    let all = match c.receipts.all() {
        Ok(r) => r,
        Err(e) => {
            o.problems
                .push(Problem::new("receipts", "a readable receipt store", e));
            return o;
        }
    };
    let by = store::supersessions(&all).unwrap_or_else(|e| {
        o.problems
            .push(Problem::new("receipts", "corrections that form chains", e));
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
        let name = rel(c, path);
        let v = match receipt::verify(r, &c.trusted) {
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
            o.lines.push(format!(
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
        o.lines.push(format!(
            "receipt {} ({name}) signed by `{}` ({}) describes this file, {state}",
            v.id,
            v.key_id,
            c.trusted[&v.key_id].fingerprint()
        ));
        match receipt::same_rendering(r, bytes) {
            Some(true) => o.lines.push(format!("{name}: the file is byte-for-byte the signed rendering")),
            Some(false) => o.lines.push(format!("{name}: same content, but the bytes differ from the signed rendering (re-serialised or another format)")),
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
            o.lines.push(format!(
                "note: {} changed since {} was signed (policy_snapshot differs)",
                c.m.file, v.id
            ));
        }
    }
    if mine.is_empty() {
        o.problems.push(Problem::new(
            "receipt",
            format!("a signed receipt for {id} in {}", rel(c, c.receipts.dir())),
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

fn verify_receipt(c: &Ctx<'_>, f: &Path, r: &Value, a: &VerifyArgs) -> Outcome {
    let mut o = Outcome::new(f.display().to_string(), "receipt");
    let v = match receipt::verify(r, &c.trusted) {
        Ok(v) => v,
        Err(p) => {
            o.problems.push(p);
            return o;
        }
    };
    o.lines.push(format!(
        "receipt {}: signature by `{}` ({}) verifies",
        v.id,
        v.key_id,
        c.trusted[&v.key_id].fingerprint()
    ));
    let found = match &a.bundle {
        Some(file) => {
            let file = if file.is_absolute() {
                file.clone()
            } else {
                c.g.cwd.join(file)
            };
            receipt::read_json(&file).map(|(_, b)| Some((file, b)))
        }
        None => find_bundle(&c.bundles, &v.bundle_ref),
    };
    match found {
        Ok(Some((path, b))) => {
            if let Err(p) = receipt::check_bundle(&b).and_then(|_| receipt::check_link(r, &b)) {
                o.problems.push(Problem::new(
                    &format!("{} {}", rel(c, &path), p.field),
                    p.expected,
                    p.actual,
                ));
            } else {
                o.lines.push(format!(
                    "links to bundle {} ({}) whose digest {} recomputes",
                    v.bundle_ref,
                    rel(c, &path),
                    v.output_digest
                ));
            }
        }
        Ok(None) => o.problems.push(Problem::new(
            "bundle_ref",
            format!(
                "bundle {} in {} to check the receipt against",
                v.bundle_ref,
                rel(c, &c.bundles)
            ),
            "no such bundle (pass --bundle FILE or --bundles DIR)",
        )),
        Err(e) => o
            .problems
            .push(Problem::new("bundle", "a readable bundle", e)),
    }
    if let Ok(all) = c.receipts.all() {
        if let Some((p, x)) = all
            .iter()
            .find(|(_, x)| x.get("supersedes").and_then(Value::as_str) == Some(&v.id))
        {
            o.lines.push(format!(
                "note: superseded by {} ({})",
                x["id"].as_str().unwrap_or(""),
                rel(c, p)
            ));
        }
    }
    o
}

/// The bundle with `bundle_id` among the `*.json` files of `dir`.
fn find_bundle(
    dir: &Path,
    bundle_id: &str,
) -> std::result::Result<Option<(PathBuf, Value)>, String> {
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
fn verify_decisions(g: &Global, dir: &Path) -> Result<Vec<Outcome>> {
    let repo = super::validate::load_repo(g, ctx_core::load::DEFAULT_MAX_FILE_SIZE)?;
    let root = repo.manifest.root.clone();
    let shown = |p: &Path| p.strip_prefix(&root).unwrap_or(p).display().to_string();
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
                Ok(actual) if actual == digest => res.lines.push(format!(
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
            Err(e) => res
                .problems
                .push(Problem::new("bundles", "a readable folder", e)),
        }
        out.push(res);
    }
    if out.is_empty() {
        let mut o = Outcome::new(dir.display().to_string(), "decisions");
        o.lines.push("no decision record cites a bundle".into());
        out.push(o);
    }
    Ok(out)
}
