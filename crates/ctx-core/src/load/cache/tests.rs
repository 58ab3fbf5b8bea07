//! The parse cache is invisible (a cached load equals a fresh one), safe (edits and
//! racy stamps are seen), robust (damage is ignored and repaired) and keeps no
//! plaintext of a private collection.

use std::path::Path;

use super::*;
use crate::load::{load_counted, ContentFilter, LoadOptions, Repo};
use crate::testutil::{settle, write_file as write};

const MANIFEST: &str = "opencontext: \"1.0\"\nid: t\ndefaults:\n  owner: team\ncontext:\n  mission: ./mission.md\ncollections:\n  notes: ./notes/**\n";

/// A repository whose files are old enough not to be racy.
fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        write(dir.path(), rel, text);
    }
    settle();
    dir
}

fn files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("opencontext.yaml", MANIFEST),
        ("mission.md", "---\nid: mission\ntype: mission\n---\n\nBe kind.\n"),
        ("notes/a.md", "---\nid: notes.a\ntype: note\nupdated: 2026-01-02T03:04:05.5Z\nttl: 30d\nconfidence: 0.25\nreferences: [mission]\n---\n\nAlpha AKIAABCDEFGHIJKLMNOP\n"),
        ("notes/b.yaml", "id: notes.b\ntype: note\ncontent:\n  steps: [1, 2.5, -3, true, null]\nexpires: null\n"),
        ("notes/c.json", "{\"id\": \"notes.c\", \"type\": \"note\", \"expires\": \"2030-01-01T00:00:00Z\", \"content\": \"C\"}"),
        ("notes/d.md", "---\nid: notes.d\n  broken: [yaml\n---\nx\n"),
        ("notes/e.md", "no front matter, derived id\n"),
    ]
}

fn load(dir: &Path, cache: bool) -> (Repo, Usage) {
    let (m, diags) = Manifest::discover(Some(dir), dir).unwrap();
    load_counted(
        m,
        diags,
        &LoadOptions {
            cache,
            ..LoadOptions::default()
        },
    )
}

/// Everything a command could observe of a loaded repository.
fn observed(r: &Repo) -> String {
    format!("{:#?}\n{:#?}\n{}", r.objects, r.diags, r.files)
}

fn cache_file(dir: &Path) -> PathBuf {
    let (m, _) = Manifest::discover(Some(dir), dir).unwrap();
    location(&m).unwrap()
}

#[test]
fn a_cached_load_is_a_fresh_load() {
    let dir = repo(&files());
    let (fresh, u) = load(dir.path(), false);
    assert_eq!(u.hits, 0);
    assert!(!dir.path().join(".ctx").exists(), "no cache unless asked");
    let (first, u) = load(dir.path(), true);
    assert_eq!((u.hits, u.parsed), (0, 6));
    let (second, u) = load(dir.path(), true);
    assert_eq!(
        (u.hits, u.parsed),
        (6, 0),
        "every file comes from the cache"
    );
    assert_eq!(observed(&first), observed(&fresh));
    assert_eq!(observed(&second), observed(&fresh));
    assert!(fresh
        .diags
        .iter()
        .any(|d| d.code == crate::diag::Code::SecretDetected));
    // Outside git the cache sits in a folder that ignores itself.
    let f = cache_file(dir.path());
    assert!(f.starts_with(dir.path().canonicalize().unwrap().join(".ctx/cache")));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".ctx/cache/.gitignore")).unwrap(),
        "# ctx's parse cache: safe to delete, never committed.\n*\n"
    );
}

#[test]
fn an_edit_that_keeps_size_and_mtime_is_seen() {
    let dir = repo(&files());
    load(dir.path(), true);
    let p = dir.path().join("notes/c.json");
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("\"C\"", "\"D\"");
    std::fs::write(&p, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (r, u) = load(dir.path(), true);
    assert_eq!(u.parsed, 1);
    let c = r.objects.iter().find(|o| o.id == "notes.c").unwrap();
    assert_eq!(c.content, Some(Value::String("D".into())));
}

#[test]
fn racy_results_are_read_again() {
    let dir = repo(&files());
    let (m, _) = Manifest::discover(Some(dir.path()), dir.path()).unwrap();
    let (members, _) = crate::load::walk::members(&m);
    let member = members
        .iter()
        .find(|x| x.rel.as_str() == "notes/a.md")
        .unwrap();
    let s = Stamp::read(&member.abs).unwrap();
    let source = source_id(&m, member);
    let (parsed, _) = crate::load::read_and_parse(&m, member, &LoadOptions::default());
    let entry = || Entry::Fresh {
        path: member.rel.as_str(),
        key: Key::Stat(s),
        source,
        scope: scope(member),
        object: parsed.object.as_ref(),
        diags: &parsed.diags,
    };
    let path = location(&m).unwrap();
    // Taken when the file had just changed (same tick): never trusted.
    ParseCache::open_at(path.clone(), &m, s.ctime_ns).save(&[entry()]);
    let c = ParseCache::open_at(path.clone(), &m, stamp::now_ns());
    assert!(c.find("notes/a.md", &source, &Key::Stat(s)).is_none());
    // Taken well after the change: trusted, but only for the same key and source.
    std::fs::remove_file(&path).unwrap();
    ParseCache::open_at(path.clone(), &m, stamp::now_ns()).save(&[entry()]);
    let c = ParseCache::open_at(path, &m, stamp::now_ns());
    let other = Stamp {
        size: s.size + 1,
        ..s
    };
    assert!(c.find("notes/a.md", &source, &Key::Stat(other)).is_none());
    assert!(c.find("notes/a.md", &[0; 16], &Key::Stat(s)).is_none());
    assert!(c
        .find("notes/a.md", &source, &Key::Blob("0".repeat(40)))
        .is_none());
    let t = c.find("notes/a.md", &source, &Key::Stat(s)).unwrap();
    // Every load shape: content whole, its kind, none; every document or checked
    // ones; content for every object or for none (a consumer who may read nothing).
    let mut shapes = Vec::new();
    for (content, prose) in [(true, true), (true, false), (false, false)] {
        for docs in [true, false] {
            for filter in [None, Some(ContentFilter::new(|_| false))] {
                shapes.push(LoadOptions {
                    content,
                    prose,
                    docs,
                    content_for: filter,
                    ..LoadOptions::default()
                });
            }
        }
    }
    for opts in shapes {
        let got = std::sync::Mutex::new(None);
        let failed = c.fetch(&[(t, 0)], &opts, &|_, f| *got.lock().unwrap() = Some(f));
        assert!(failed.is_empty());
        let back = got.into_inner().unwrap().unwrap();
        let mut want = parsed.object.clone().unwrap();
        opts.trim(&mut want);
        assert_eq!(format!("{:?}", back.object), format!("{:?}", Some(want)));
        assert_eq!(format!("{:?}", back.diags), format!("{:?}", parsed.diags));
    }
}

#[test]
fn new_defaults_invalidate_results() {
    let dir = repo(&files());
    load(dir.path(), true);
    write(
        dir.path(),
        "opencontext.yaml",
        &MANIFEST.replace("owner: team", "owner: others"),
    );
    let (r, u) = load(dir.path(), true);
    assert_eq!(u.parsed, 6, "every member takes the manifest defaults");
    assert_eq!(observed(&r), observed(&load(dir.path(), false).0));
    assert!(r
        .objects
        .iter()
        .all(|o| o.meta.owner.as_deref() == Some("others")));
}

#[test]
fn damaged_caches_are_ignored_and_rebuilt() {
    let dir = repo(&files());
    let (fresh, _) = load(dir.path(), false);
    load(dir.path(), true);
    let f = cache_file(dir.path());
    let good = std::fs::read(&f).unwrap();
    let mut flipped = good.clone();
    let n = flipped.len();
    flipped[n / 2] ^= 0x40;
    for bad in [
        flipped,
        good[..n - 7].to_vec(),
        good[..30].to_vec(),
        b"garbage".to_vec(),
        Vec::new(),
    ] {
        std::fs::write(&f, &bad).unwrap();
        let (r, u) = load(dir.path(), true);
        assert!(u.parsed > 0);
        assert_eq!(observed(&r), observed(&fresh));
        let (r, u) = load(dir.path(), true);
        assert_eq!((u.hits, u.parsed), (6, 0), "rebuilt");
        assert_eq!(observed(&r), observed(&fresh));
    }
    std::fs::remove_file(&f).unwrap();
    assert_eq!(observed(&load(dir.path(), true).0), observed(&fresh));
}

#[test]
fn appended_results_and_compaction() {
    let dir = repo(&files());
    load(dir.path(), true);
    let f = cache_file(dir.path());
    let before = std::fs::metadata(&f).unwrap().len();
    write(
        dir.path(),
        "notes/new.md",
        "---\nid: notes.new\ntype: note\n---\nnew\n",
    );
    settle();
    let (_, u) = load(dir.path(), true);
    assert_eq!((u.hits, u.parsed), (6, 1));
    assert!(std::fs::metadata(&f).unwrap().len() > before, "appended");
    let (r, u) = load(dir.path(), true);
    assert_eq!((u.hits, u.parsed), (7, 0));
    assert_eq!(observed(&r), observed(&load(dir.path(), false).0));
}

/// A sealed member: clear header, armored ciphertext (to a real public key, so the
/// strict header check accepts it).
fn sealed() -> String {
    let recipient = age::x25519::Identity::generate().to_public().to_string();
    format!("---\nid: vault.sealed\ntype: fact\nowner: me\nextensions:\n  ctx.private:\n    encrypted: true\n    recipients: [{recipient}]\n---\n-----BEGIN AGE ENCRYPTED FILE-----\nYWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBjaXBoZXJ0ZXh0\n-----END AGE ENCRYPTED FILE-----\n")
}

fn private_manifest(private: bool) -> String {
    let ext = if private {
        "extensions:\n  ctx.private:\n    collections:\n      vault:\n        recipients: [\"age1example\"]\n"
    } else {
        ""
    };
    format!("opencontext: \"1.0\"\nid: p\ncollections:\n  vault: ./vault/**\n  notes: ./notes/**\n{ext}")
}

#[test]
fn private_plaintext_never_reaches_the_cache() {
    let canary = "CANARY-7f3a9c";
    let plain = format!("---\nid: vault.plain\ntype: fact\nowner: me\n---\n{canary}\n");
    let dir = repo(&[
        ("opencontext.yaml", &private_manifest(false)),
        ("vault/plain.md", &plain),
        ("vault/sealed.md", &sealed()),
        (
            "notes/n.md",
            "---\nid: notes.n\ntype: note\nowner: me\n---\nclear\n",
        ),
    ]);
    // Before the collection is private, its plaintext is ordinary content.
    load(dir.path(), true);
    let f = cache_file(dir.path());
    let has_canary = |f: &Path| {
        let b = std::fs::read(f).unwrap();
        b.windows(canary.len()).any(|w| w == canary.as_bytes())
    };
    assert!(has_canary(&f));
    // Declared private: the next load purges it, and it is never written again.
    write(dir.path(), "opencontext.yaml", &private_manifest(true));
    let (r, _) = load(dir.path(), true);
    assert!(!has_canary(&f), "purged");
    assert!(
        r.objects.iter().any(|o| o.id == "vault.plain"),
        "still loaded"
    );
    settle();
    let (_, u) = load(dir.path(), true);
    assert_eq!(
        (u.hits, u.parsed),
        (2, 1),
        "sealed and clear members cached; plaintext parsed"
    );
    assert!(!has_canary(&f));
    // An unreadable `ctx.private` counts every collection as private.
    write(
        dir.path(),
        "opencontext.yaml",
        &private_manifest(false).replace(
            "collections:\n  vault",
            "extensions:\n  ctx.private: nonsense\ncollections:\n  vault",
        ),
    );
    settle();
    load(dir.path(), true);
    let (_, u) = load(dir.path(), true);
    assert_eq!(
        (u.hits, u.parsed),
        (1, 2),
        "only the sealed member is cached"
    );
}

/// A load that keeps only the kind of prose (validate, doctor) sees what a full
/// load sees with prose emptied — parsed cold, parsed while writing the cache, and
/// from the cache — and the cache it writes still serves full loads whole.
#[test]
fn prose_kind_loads_match_full_loads_and_keep_the_cache_whole() {
    let dir = repo(&files());
    let (m, diags) = Manifest::discover(Some(dir.path()), dir.path()).unwrap();
    let kind = |cache: bool| {
        load_counted(
            m.clone(),
            diags.clone(),
            &LoadOptions {
                cache,
                prose: false,
                ..LoadOptions::default()
            },
        )
    };
    let (full, _) = load(dir.path(), false);
    let mut want = full.clone();
    want.objects.iter_mut().for_each(|o| Keep::Kind.trim(o));
    let b = |r: &Repo| {
        r.objects
            .iter()
            .find(|o| o.id == "notes.b")
            .unwrap()
            .content
            .clone()
    };
    assert!(
        matches!(b(&want), Some(Value::Object(_))),
        "structured content stays whole"
    );
    assert_eq!(
        want.objects
            .iter()
            .find(|o| o.id == "notes.c")
            .unwrap()
            .content,
        Some(Value::String(String::new())),
        "prose keeps its kind only"
    );
    let (cold, u) = kind(false);
    assert_eq!(u.hits, 0);
    assert_eq!(observed(&cold), observed(&want));
    let (writing, u) = kind(true);
    assert_eq!((u.hits, u.parsed), (0, 6));
    assert_eq!(observed(&writing), observed(&want));
    let (cached, u) = kind(true);
    assert_eq!((u.hits, u.parsed), (6, 0));
    assert_eq!(observed(&cached), observed(&want));
    // What the kind-only load wrote holds every word.
    let (whole, u) = load(dir.path(), true);
    assert_eq!((u.hits, u.parsed), (6, 0));
    assert_eq!(observed(&whole), observed(&full));
    // Prose has a region of its own (the file's last bytes): a kind-only load never
    // reads it, so damage there costs it nothing, while a full load re-parses.
    let f = cache_file(dir.path());
    let mut bytes = std::fs::read(&f).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 0x40;
    std::fs::write(&f, &bytes).unwrap();
    let (cached, u) = kind(true);
    assert_eq!((u.hits, u.parsed), (6, 0), "prose region never read");
    assert_eq!(observed(&cached), observed(&want));
    let (whole, u) = load(dir.path(), true);
    assert!(u.parsed > 0, "damaged prose is parsed again");
    assert_eq!(observed(&whole), observed(&full));
}

/// A content filter drops the content of the objects it rejects, and their documents
/// but what checks read, whether parsed or cached, and never what the cache holds
/// for others.
#[test]
fn content_filters_keep_only_accepted_content() {
    let dir = repo(&files());
    let (m, diags) = Manifest::discover(Some(dir.path()), dir.path()).unwrap();
    let only_b = |cache: bool| {
        load_counted(
            m.clone(),
            diags.clone(),
            &LoadOptions {
                cache,
                content_for: Some(crate::load::ContentFilter::new(|o| o.id == "notes.b")),
                ..LoadOptions::default()
            },
        )
    };
    let (full, _) = load(dir.path(), false);
    let mut want = full.clone();
    for o in want.objects.iter_mut().filter(|o| o.id != "notes.b") {
        o.content = None;
        o.elide_doc();
    }
    assert!(want.objects.iter().any(|o| o.content.is_some()));
    let docs = |r: &Repo| r.objects.iter().filter(|o| !o.doc.is_empty()).count();
    assert_eq!(
        (docs(&full), docs(&want)),
        (5, 2),
        "notes.b's document and the one that declares a ttl"
    );
    for (cache, hits) in [(false, 0), (true, 0), (true, 6)] {
        let (r, u) = only_b(cache);
        assert_eq!(u.hits, hits);
        assert_eq!(observed(&r), observed(&want));
    }
    let (whole, u) = load(dir.path(), true);
    assert_eq!(u.hits, 6);
    assert_eq!(observed(&whole), observed(&full));
}

#[test]
fn sequential_lookups_find_what_single_ones_do() {
    let dir = repo(&files());
    let (_, first) = load(dir.path(), true);
    assert!(first.parsed > 0);
    let (m, _) = Manifest::discover(Some(dir.path()), dir.path()).unwrap();
    let (members, _) = crate::load::walk::members(&m);
    let c = ParseCache::open(&m, stamp::now_ns()).unwrap();
    let keys: Vec<(String, SourceId, Key)> = members
        .iter()
        .map(|x| {
            let k = Key::Stat(Stamp::read(&x.abs).unwrap());
            (x.rel.as_str().to_string(), source_id(&m, x), k)
        })
        .collect();
    let single: Vec<_> = keys.iter().map(|(p, s, k)| c.find(p, s, k)).collect();
    assert!(
        single.iter().filter(|t| t.is_some()).count() >= 5,
        "{single:?}"
    );
    let mut cursor = 0;
    let sequential: Vec<_> = keys
        .iter()
        .map(|(p, s, k)| c.find_from(&mut cursor, p, s, k))
        .collect();
    assert_eq!(sequential, single);
    // Out of order, a lookup may miss (the file is parsed again), never find another's.
    let mut cursor = 0;
    for (p, s, k) in keys.iter().rev() {
        let t = c.find_from(&mut cursor, p, s, k);
        assert!(t.is_none() || t == c.find(p, s, k));
    }
}
