//! Where a load's memory goes, for performance work: a counting allocator around the
//! system one, and the live and peak heap after each stage of the pipeline a command
//! runs (load, validate, resolve, compile, render), with the sizes of what the loaded
//! repository holds.
//!
//!     memprobe validate|resolve|cached|warm|whole DIR [ROLE]
//!
//! `validate` loads as `ctx validate --no-cache` does and checks; `cached` the same
//! through the parse cache (delete the cache first to see the first, writing run);
//! `resolve` loads with content and compiles ROLE's (default `support`) whole bundle;
//! `warm` resolves as the benchmark's warm row does (through the cache, the content
//! only of what ROLE may read, a task and `--max-tokens 8000`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Relaxed) + new - l.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static A: Counting = Counting;

fn mib(n: usize) -> f64 {
    n as f64 / (1024.0 * 1024.0)
}

fn stage(name: &str, t: std::time::Instant) {
    println!(
        "{name:<28} live {:>7.1} MiB   peak {:>7.1} MiB   {:>6.2} s",
        mib(LIVE.load(Relaxed)),
        mib(PEAK.load(Relaxed)),
        t.elapsed().as_secs_f64()
    );
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, dir) = match args.as_slice() {
        [m, d, ..] => (m.as_str(), std::path::PathBuf::from(d)),
        _ => panic!("usage: memprobe validate|resolve|cached|warm DIR [ROLE]"),
    };
    let role = args.get(2).cloned().unwrap_or_else(|| "support".into());
    let t = std::time::Instant::now();
    if mode == "warm" || mode == "whole" {
        return warm(&dir, role, mode == "warm", t);
    }
    // As the CLI loads: checks only for validate (structured content, prose as its
    // kind, only the documents checks read), everything for a whole bundle.
    let checks = mode != "resolve";
    let opts = ctx_core::load::LoadOptions {
        cache: mode == "cached",
        prose: !checks,
        docs: !checks,
        ..Default::default()
    };
    let repo = ctx_core::load::open(Some(&dir), &dir, &opts).expect("a repository");
    stage("load", t);
    summary(&repo);
    if mode == "resolve" {
        let who = ctx_core::view::Who {
            agent: None,
            roles: vec![role],
        };
        let o = ctx_core::resolve::ResolveOptions::new(who, chrono::Utc::now());
        let mut repo = repo;
        compile(&mut repo, &o, "resolve", t);
    } else {
        let findings = ctx_core::validate::validate(
            &repo,
            ctx_core::validate::ValidateOptions {
                strict: false,
                at: None,
            },
        );
        stage("validate", t);
        println!("  {} findings", findings.len());
    }
}

fn warm(dir: &std::path::Path, role: String, budget: bool, t: std::time::Instant) {
    let who = ctx_core::view::Who {
        agent: None,
        roles: vec![role],
    };
    let at = ctx_core::time::parse_timestamp("2026-11-01T00:00:00Z").expect("an instant");
    let mut o = ctx_core::resolve::ResolveOptions::new(who, at);
    o.task = Some("refund for a customer invoice".into());
    o.max_tokens = budget.then_some(8000);
    let load = ctx_core::load::LoadOptions {
        cache: budget,
        content: true,
        ..Default::default()
    };
    let mut repo = ctx_core::resolve::open(Some(dir), dir, &load, &o).expect("a repository");
    stage("load", t);
    summary(&repo);
    compile(
        &mut repo,
        &o,
        if budget {
            "resolve (with the budget)"
        } else {
            "resolve"
        },
        t,
    );
}

/// Resolve `o` on `repo`, compile and render the bundle, a stage each; the content is
/// released before compiling, as `ctx resolve` does.
fn compile(
    repo: &mut ctx_core::load::Repo,
    o: &ctx_core::resolve::ResolveOptions,
    label: &str,
    t: std::time::Instant,
) {
    let req = ctx_core::resolve::Request::build(&repo.manifest, o).expect("a request");
    let mut r = ctx_core::resolve::resolve(repo, req).expect("resolves");
    stage(label, t);
    repo.release_content();
    let bundle = ctx_core::bundle::compile(repo, &mut r, "2026-11-01T00:00:00Z");
    stage("compile", t);
    let mut out = std::io::BufWriter::new(std::io::sink());
    serde_json::to_writer_pretty(&mut out, &bundle).expect("writes");
    stage("render", t);
    println!("  {} objects in the bundle", r.included.len());
}

/// What the loaded repository holds, by kind.
fn summary(repo: &ctx_core::load::Repo) {
    let objects = &repo.objects;
    let doc: usize = objects.iter().map(|o| o.doc.len()).sum();
    let kept = objects.iter().filter(|o| !o.doc.is_empty()).count();
    println!("  docs kept {kept}");
    let content: usize = objects
        .iter()
        .filter_map(|o| o.content.as_ref())
        .map(|c| match c {
            serde_json::Value::String(s) => s.capacity(),
            other => other.to_string().len(),
        })
        .sum();
    println!(
        "  {} objects × {} B struct = {:.1} MiB; doc text {:.1} MiB; content ≈ {:.1} MiB; {} findings × {} B",
        objects.len(),
        std::mem::size_of::<ctx_core::object::ContextObject>(),
        mib(objects.len() * std::mem::size_of::<ctx_core::object::ContextObject>()),
        mib(doc),
        mib(content),
        repo.diags.len(),
        std::mem::size_of::<ctx_core::diag::Diagnostic>(),
    );
}
