//! Fail closed: one regression test per promise of the fail-closed work. Each of
//! these failed on the code before it: invalid governance was served with defaults,
//! broken role definitions were half applied, and several outputs bypassed the
//! consumer's redacted view.

use std::path::Path;

use serde_json::Value;

use crate::support::{ctx_in, Repo, Run};

/// Run ctx with a private HOME and no inherited identities or keys.
pub fn run(dir: &Path, args: &[&str]) -> Run {
    ctx_in(dir).args(args).run()
}

pub use crate::support::git::{git, have_git};

fn ids(bundle: &Value, key: &str) -> Vec<String> {
    bundle[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect()
}

fn exclusion<'a>(bundle: &'a Value, id: &str) -> &'a Value {
    bundle["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not listed as excluded:\n{bundle:#}"))
}

const SUPPORT: &str = "opencontext: \"1.0\"\nid: acme\ncollections:\n  c: ./context/**\n\
roles:\n  support:\n    include: [c.*]\n    max_classification: confidential\n";

// ---------------------------------------------------------------- 1. invalid governance

/// (object id, the field that is invalid, front matter line, the value that must never be echoed)
const INVALID: [(&str, &str, &str, &str); 14] = [
    (
        "c.bad-class",
        "classification",
        "classification: Secret",
        "Secret",
    ),
    (
        "c.bad-deny",
        "permissions.deny",
        "permissions:\n  deny: support",
        "",
    ),
    (
        "c.bad-read",
        "permissions.read",
        "permissions:\n  read: [support, 7]",
        "",
    ),
    (
        "c.bad-write",
        "permissions.write",
        "permissions:\n  write: support",
        "",
    ),
    (
        "c.bad-expires",
        "expires",
        "expires: 2020-01-01",
        "2020-01-01",
    ),
    ("c.bad-valid", "valid_from", "valid_from: soon", "soon"),
    ("c.bad-status", "status", "status: live", "live"),
    (
        "c.bad-authority",
        "authority",
        "authority: supreme",
        "supreme",
    ),
    ("c.bad-trust", "trust", "trust: total", "total"),
    (
        "c.bad-review",
        "review",
        "review:\n  next_review: someday",
        "someday",
    ),
    ("c.bad-supersedes", "supersedes", "supersedes: 5", ""),
    ("c.bad-ttl", "ttl", "ttl: forever", "forever"),
    ("c.bad-redact", "redact", "redact:\n  - path: \"ssn[\"", ""),
    (
        "c.misspelt",
        "unknown-field",
        "classifcation: restricted",
        "",
    ),
];

fn invalid_governance_repo() -> Repo {
    let repo = Repo::new(&[
        ("opencontext.yaml", SUPPORT),
        (
            "context/ok.md",
            "---\nid: c.ok\ntype: note\nowner: s\n---\n\nAll fine here.\n",
        ),
        // A number is no id: the object belongs to no scope at all.
        (
            "context/numbered.md",
            "---\nid: 42\ntype: note\nowner: s\n---\n\nCANARY-numbered-id\n",
        ),
    ]);
    for (id, _, line, _) in INVALID {
        repo.write(
            &format!("context/{}.md", id.trim_start_matches("c.")),
            &format!("---\nid: {id}\ntype: note\nowner: s\n{line}\n---\n\nCANARY-{id}\n"),
        );
    }
    repo
}

#[test]
fn invalid_governance_is_withheld_with_a_reason_and_reported_by_validate() {
    let repo = invalid_governance_repo();
    let r = run(repo.path(), &["resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("CANARY"), "{}", r.stdout);
    let b = r.json();
    assert_eq!(ids(&b, "objects"), vec!["c.ok"]);
    for (id, field, _, value) in INVALID {
        let e = exclusion(&b, id);
        assert_eq!(e["reason"], "permission-denied", "{e}");
        let detail = e["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("`{field}`")), "{id}: {detail}");
        if !value.is_empty() {
            assert!(!detail.contains(value), "{id}: the value leaked: {detail}");
        }
    }
    // Without a valid id an object is in nobody's scope: counted and warned about, never named.
    assert!(!r.stdout.contains("\"42\""), "{}", r.stdout);
    assert!(b["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "invalid-governance" && w.get("id").is_none()));

    for args in [
        &["list", "--role", "support", "--format", "json"][..],
        &["list", "--format", "json"],
        &["search", "CANARY", "--role", "support"],
        &["search", "CANARY"],
        &["graph", "--format", "json"],
    ] {
        let r = run(repo.path(), args);
        assert!(
            !r.stdout.contains("CANARY") && !r.stdout.contains("c.bad-"),
            "{args:?}:\n{}",
            r.stdout
        );
    }
    let denied = run(repo.path(), &["get", "c.bad-class", "--role", "support"]);
    assert_eq!(denied.code, 3, "{}{}", denied.stdout, denied.stderr);
    let author = run(repo.path(), &["get", "c.bad-class"]);
    assert_eq!(author.code, 1, "{}{}", author.stdout, author.stderr);
    assert!(
        author.stderr.contains("withheld") && author.stderr.contains("`classification`"),
        "{}",
        author.stderr
    );
    assert!(!author.stdout.contains("CANARY"));

    let v = run(repo.path(), &["validate", "--format", "json"]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    let findings = v.json()["findings"].as_array().unwrap().clone();
    for (id, field, _, _) in INVALID {
        let file = format!("context/{}.md", id.trim_start_matches("c."));
        let top = field.split('.').next().unwrap();
        let f = findings
            .iter()
            .find(|f| {
                f["file"] == file.as_str()
                    && f["severity"] == "error"
                    && (f["field"].as_str().unwrap_or("").starts_with(top)
                        || (field == "unknown-field"
                            && f["message"]
                                .as_str()
                                .unwrap_or("")
                                .contains("unknown field")))
            })
            .unwrap_or_else(|| panic!("no finding for {id} ({field}):\n{findings:#?}"));
        assert!(f["line"].as_u64().is_some_and(|l| l > 1), "{f}");
        assert!(f.get("remediation").is_some(), "{f}");
    }
}

// ---------------------------------------------------------------- 1. broken role definitions

const HIDDEN: &str = "CANARY-hidden-by-exclude";

fn role_repo(roles: &str) -> Repo {
    let manifest =
        format!("opencontext: \"1.0\"\nid: acme\ncollections:\n  c: ./context/**\nroles:\n{roles}");
    Repo::new(&[
        ("opencontext.yaml", &manifest),
        (
            "context/a.yaml",
            "id: c.a\ntype: note\nowner: s\nversion: 1\npermissions:\n  write: [support]\ncontent:\n  text: visible\n",
        ),
        (
            "context/hidden/x.md",
            &format!("---\nid: c.hidden.x\ntype: note\nowner: s\n---\n\n{HIDDEN}\n"),
        ),
    ])
}

/// Every consumer-facing command, as a consumer and as the author (`mcp` refuses
/// before it reads a message; `serve` has its own row in serve_canary.rs).
const CONSUMER_COMMANDS: [&[&str]; 14] = [
    &["resolve", "--role", "support"],
    &["bundle", "--role", "support"],
    &["get", "c.hidden.x", "--role", "support"],
    &["list", "--role", "support"],
    &["list"],
    &["search", "hidden", "--role", "support"],
    &["export", "--target", "agents-md", "--role", "support"],
    &["graph", "--role", "support"],
    &["diff", "c.a", "c.hidden.x", "--role", "support"],
    &["history", "c.hidden.x", "--role", "support"],
    &[
        "add",
        "c.new",
        "--type",
        "note",
        "--role",
        "support",
        "--dry-run",
    ],
    &["supersede", "c.a", "--title", "New", "--dry-run"],
    &["get", "c.a"],
    &["mcp", "--role", "support"],
];

#[test]
fn broken_role_definitions_make_every_consumer_command_refuse() {
    let cases: [(&str, &str); 9] = [
        (
            "  support:\n    include: [c.*]\n    exclude: [\"c.hidden*\"]\n",
            "roles.support.exclude",
        ),
        (
            "  support:\n    include: [c.*]\n    excludes: [c.hidden.*]\n",
            "roles.support.excludes",
        ),
        (
            "  support:\n    include: [c.*]\n    exclude: [c.hidden.*]\n    max_classification: Internal\n",
            "roles.support.max_classification",
        ),
        (
            "  support:\n    include: [c.*]\n    inherits: [base]\n  base:\n    include: [c.a]\n    inherits: [support]\n",
            "inherits",
        ),
        (
            "  support:\n    include: [c.*]\n    inherits: [ghost]\n",
            "roles.support.inherits",
        ),
        (
            "  support:\n    include: [c.*]\nagents:\n  bot:\n    roles: [nobody]\n",
            "agents.bot.roles",
        ),
        (
            "  support:\n    include: [c.*]\n    redact:\n      - path: \"text[\"\n",
            "roles.support.redact",
        ),
        (
            "  support:\n    include: [c.*]\n    redact:\n      - path: text\n        mode: shred\n",
            "roles.support.redact",
        ),
        (
            "  support:\n    include: [c.*]\nredact:\n  - path: \"text[\"\n",
            "redact[0]",
        ),
    ];
    for (roles, field) in cases {
        let repo = role_repo(roles);
        let v = run(repo.path(), &["validate"]);
        assert_eq!(v.code, 1, "validate must fail for\n{roles}{}", v.stdout);
        for args in CONSUMER_COMMANDS {
            let r = run(repo.path(), args);
            // `ctx mcp` still answers `initialize` (the host shows the finding from
            // every tool); here stdin closes at once, a clean end.
            let want = if args[0] == "mcp" { 0 } else { 1 };
            assert_eq!(
                r.code, want,
                "{args:?} must refuse for\n{roles}stdout:\n{}\nstderr:\n{}",
                r.stdout, r.stderr
            );
            assert!(
                r.stderr.contains("refusing to serve context")
                    && r.stderr.contains(field)
                    && r.stderr.contains("fix:")
                    && r.stderr.contains("opencontext.yaml:"),
                "{args:?} for\n{roles}{}",
                r.stderr
            );
            assert!(
                !r.stderr.contains("unknown role"),
                "a broken role must not vanish: {}",
                r.stderr
            );
            assert!(!r.stdout.contains(HIDDEN) && !r.stderr.contains(HIDDEN));
        }
        assert!(!repo.path().join("AGENTS.md").exists());
    }
}

// ---------------------------------------------------------------- 2. diff, supersede, history

const CUSTOMER_ROLES: &str = "  support:\n    include: [c.*]\n    max_classification: confidential\n    redact:\n      - path: ssn\n      - path: contacts[*].email\n        mode: mask\n";

fn customer(version: u64, ssn: &str, email: &str) -> String {
    let sup = if version > 1 {
        format!("supersedes: [c.cust@{}]\n", version - 1)
    } else {
        String::new()
    };
    format!(
        "id: c.cust\ntype: customer\nowner: s\nversion: {version}\n{sup}permissions:\n  write: [support]\n\
         content:\n  name: ACME\n  tier: {}\n  ssn: \"{ssn}\"\n  contacts:\n    - email: {email}\n",
        if version > 1 { "gold" } else { "silver" }
    )
}

fn customer_repo() -> Repo {
    let manifest = format!(
        "opencontext: \"1.0\"\nid: acme\ncollections:\n  c: ./context/**\nroles:\n{CUSTOMER_ROLES}"
    );
    Repo::new(&[
        ("opencontext.yaml", &manifest),
        (
            "context/cust.yaml",
            &customer(1, "111-11-1111", "old@acme.example"),
        ),
        (
            "context/cust.v2.yaml",
            &customer(2, "222-22-2222", "new@acme.example"),
        ),
    ])
}

const CUSTOMER_SECRETS: [&str; 4] = [
    "111-11-1111",
    "222-22-2222",
    "old@acme.example",
    "new@acme.example",
];

#[test]
fn diff_of_two_versions_shows_only_what_the_role_sees() {
    let repo = customer_repo();
    for fmt in ["text", "json"] {
        let r = run(
            repo.path(),
            &[
                "diff", "c.cust@1", "c.cust@2", "--role", "support", "--format", fmt,
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stdout.contains("silver") && r.stdout.contains("gold"),
            "{}",
            r.stdout
        );
        for s in CUSTOMER_SECRETS {
            assert!(!r.stdout.contains(s), "{fmt}: {s} leaked:\n{}", r.stdout);
        }
    }
    // The author's diff still shows everything.
    let author = run(repo.path(), &["diff", "c.cust@1", "c.cust@2"]);
    assert!(author.stdout.contains("222-22-2222"), "{}", author.stdout);
}

#[test]
fn diff_between_revisions_shows_only_what_the_role_sees() {
    if !have_git() {
        return;
    }
    let repo = customer_repo();
    std::fs::remove_file(repo.path().join("context/cust.v2.yaml")).unwrap();
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "one"]);
    repo.write(
        "context/cust.yaml",
        &customer(1, "222-22-2222", "new@acme.example"),
    );
    git(repo.path(), &["commit", "-q", "-am", "two"]);
    for fmt in ["text", "json"] {
        let r = run(
            repo.path(),
            &[
                "diff",
                "--rev",
                "HEAD~1..HEAD",
                "--role",
                "support",
                "--format",
                fmt,
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        for s in CUSTOMER_SECRETS {
            assert!(!r.stdout.contains(s), "{fmt}: {s} leaked:\n{}", r.stdout);
        }
    }
    let author = run(repo.path(), &["diff", "--rev", "HEAD~1..HEAD"]);
    assert!(author.stdout.contains("222-22-2222"), "{}", author.stdout);
}

#[test]
fn supersede_dry_run_shows_the_old_content_as_the_role_sees_it() {
    let repo = customer_repo();
    let r = run(
        repo.path(),
        &[
            "supersede",
            "c.cust",
            "--title",
            "ACME Inc.",
            "--role",
            "support",
            "--dry-run",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("would create") && r.stdout.contains("gold"),
        "{}",
        r.stdout
    );
    for s in CUSTOMER_SECRETS {
        assert!(!r.stdout.contains(s), "{s} leaked:\n{}", r.stdout);
    }
    // Nothing was written, and the author's dry run is byte for byte.
    assert!(!repo.path().join("context/cust.v3.yaml").exists());
    let author = run(
        repo.path(),
        &["supersede", "c.cust", "--title", "ACME Inc.", "--dry-run"],
    );
    assert!(author.stdout.contains("222-22-2222"), "{}", author.stdout);
}

#[test]
fn history_never_names_a_successor_the_role_cannot_see() {
    let manifest = "opencontext: \"1.0\"\nid: acme\ncollections:\n  c: ./context/c/**\n  vault: ./context/vault/**\n\
roles:\n  support:\n    include: [c.*]\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", manifest),
        ("context/c/old.md", "---\nid: c.old\ntype: note\nowner: s\n---\n\nOld.\n"),
        (
            "context/vault/new.md",
            "---\nid: vault.successor-canary\ntype: note\nowner: s\nsupersedes: [c.old]\n---\n\nNew.\n",
        ),
    ]);
    for fmt in ["text", "json"] {
        let r = run(
            repo.path(),
            &["history", "c.old", "--role", "support", "--format", fmt],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!r.stdout.contains("successor-canary"), "{}", r.stdout);
    }
    let author = run(repo.path(), &["history", "c.old"]);
    assert!(
        author.stdout.contains("vault.successor-canary"),
        "{}",
        author.stdout
    );
}

// ---------------------------------------------------------------- 2. content from every source

#[test]
fn content_uri_sources_are_redacted_like_inline_content() {
    let manifest = format!(
        "opencontext: \"1.0\"\nid: acme\ncollections:\n  c: ./context/**\nroles:\n{CUSTOMER_ROLES}"
    );
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest),
        ("data/a.json", "{\"name\": \"A\", \"ssn\": \"JSON-SSN-111\"}\n"),
        ("data/b.yaml", "name: B\nssn: YAML-SSN-222\n"),
        ("data/c.md", "---\nname: C\nssn: FM-SSN-333\n---\n\nPlain words.\n"),
        ("data/broken.json", "{\"ssn\": \"BROKEN-SSN-444\",\n"),
        ("data/prose.txt", "PROSE-SSN-555 in free text\n"),
        ("context/a.yaml", "id: c.a\ntype: note\nowner: s\ncontent_uri: ./data/a.json\n"),
        ("context/b.yaml", "id: c.b\ntype: note\nowner: s\ncontent_uri: ./data/b.yaml\n"),
        ("context/c.yaml", "id: c.c\ntype: note\nowner: s\ncontent_uri: ./data/c.md\n"),
        (
            "context/broken.yaml",
            "id: c.broken\ntype: note\nowner: s\ncontent_uri: ./data/broken.json\n",
        ),
        (
            "context/prose.yaml",
            "id: c.prose\ntype: note\nowner: s\ncontent_uri: ./data/prose.txt\nredact:\n  - path: ssn\n",
        ),
    ]);
    let r = run(repo.path(), &["resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for s in [
        "JSON-SSN-111",
        "YAML-SSN-222",
        "FM-SSN-333",
        "BROKEN-SSN-444",
    ] {
        assert!(!r.stdout.contains(s), "{s} leaked:\n{}", r.stdout);
    }
    let b = r.json();
    assert_eq!(ids(&b, "objects"), vec!["c.a", "c.b", "c.c", "c.prose"]);
    for o in &b["objects"].as_array().unwrap()[..3] {
        assert_eq!(o["redacted"], serde_json::json!(["ssn"]), "{o}");
    }
    let c = &b["objects"][2]["content"];
    assert!(c.as_str().unwrap().contains("Plain words."), "{c}");
    // Structured content that cannot be parsed is withheld, with no byte of it in the detail.
    let e = exclusion(&b, "c.broken");
    assert_eq!(e["reason"], "permission-denied", "{e}");
    assert!(
        e["detail"].as_str().unwrap().contains("cannot be parsed"),
        "{e}"
    );
    // Prose has no paths: a rule matches nothing in it (redaction is structural).
    assert!(b["objects"][3].get("redacted").is_none());
    // Without redaction rules (the author's own view) the source is served as written.
    let m2 = "opencontext: \"1.0\"\nid: acme\ncollections:\n  c: ./context/**\nroles:\n  plain:\n    include: [c.a]\n";
    repo.write("opencontext.yaml", m2);
    let plain = run(repo.path(), &["resolve", "--role", "plain"]);
    assert!(plain.stdout.contains("JSON-SSN-111"), "{}", plain.stdout);
}

#[test]
fn a_malformed_object_redaction_path_withholds_the_object() {
    let repo = Repo::new(&[
        ("opencontext.yaml", SUPPORT),
        (
            "context/p.yaml",
            "id: c.p\ntype: person\nowner: s\nredact:\n  - path: \"ssn[\"\ncontent:\n  ssn: MALFORMED-PATH-SSN\n",
        ),
    ]);
    let r = run(repo.path(), &["resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("MALFORMED-PATH-SSN"), "{}", r.stdout);
    assert!(exclusion(&r.json(), "c.p")["detail"]
        .as_str()
        .unwrap()
        .contains("`redact`"));
    let v = run(repo.path(), &["validate"]);
    assert_eq!(v.code, 1);
    assert!(v.stdout.contains("ssn["), "{}", v.stdout);
}

// ---------------------------------------------------------------- 2. search and ranking

#[test]
fn search_and_ranking_see_only_the_redacted_view() {
    let manifest = format!(
        "opencontext: \"1.0\"\nid: acme\ncollections:\n  c: ./context/**\nroles:\n{CUSTOMER_ROLES}  auditor:\n    include: [c.*]\n    max_classification: confidential\n"
    );
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest),
        (
            "context/p.yaml",
            "id: c.p\ntype: person\nowner: s\ncontent:\n  name: Pat\n  ssn: zqxvw-guessable\n",
        ),
        (
            "context/q.md",
            "---\nid: c.q\ntype: note\nowner: s\n---\n\nNothing to see.\n",
        ),
        // A twin without the secret: ranks with c.p unless ranking sees the secret.
        (
            "context/a.yaml",
            "id: c.a\ntype: person\nowner: s\ncontent:\n  name: Pat\n",
        ),
    ]);
    // The right guess finds nothing, exactly like a wrong one.
    for guess in ["zqxvw-guessable", "zqxvw", "wrong-guess"] {
        let r = run(
            repo.path(),
            &["search", guess, "--role", "support", "--format", "json"],
        );
        assert_eq!(r.code, 1, "{guess}: {}", r.stdout);
        assert_eq!(r.json(), serde_json::json!([]), "{guess}");
    }
    // The author still finds it.
    assert_eq!(run(repo.path(), &["search", "zqxvw"]).code, 0);
    // --task relevance does not see it either: below any --min-relevance.
    let r = run(
        repo.path(),
        &[
            "resolve",
            "--role",
            "support",
            "--task",
            "zqxvw",
            "--min-relevance",
            "0.000001",
        ],
    );
    let b = r.json();
    assert!(ids(&b, "objects").is_empty(), "{b:#}");
    assert_eq!(exclusion(&b, "c.p")["reason"], "not-relevant");
    // Order and --limit: for a role without the redaction the secret makes c.p the
    // most relevant; for support it is redacted, so c.p and its twin tie and the
    // tie-break keeps c.a.
    let first = |role: &str| {
        let args = [
            "resolve",
            "--role",
            role,
            "--task",
            "zqxvw pat",
            "--limit",
            "1",
        ];
        let r = run(repo.path(), &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        ids(&r.json(), "objects")
    };
    assert_eq!(
        first("auditor"),
        ["c.p"],
        "the unredacted ranking sees the value"
    );
    assert_eq!(first("support"), ["c.a"], "ranking saw a redacted value");
}

// ---------------------------------------------------------------- 2. keyed hash

#[test]
fn hash_redaction_is_keyed_and_fails_closed_without_a_key() {
    let manifest = "opencontext: \"1.0\"\nid: acme\ncollections:\n  c: ./context/**\nroles:\n  support:\n    include: [c.*]\n    redact:\n      - path: pin\n        mode: hash\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", manifest),
        (
            "context/card.yaml",
            "id: c.card\ntype: card\nowner: s\ncontent:\n  holder: Pat\n  pin: \"4821\"\n",
        ),
    ]);
    let none = run(repo.path(), &["resolve", "--role", "support"]);
    assert_eq!(none.code, 0, "{}", none.stderr);
    assert!(!none.stdout.contains("4821"), "{}", none.stdout);
    let e = exclusion(&none.json(), "c.card").clone();
    assert!(
        e["detail"].as_str().unwrap().contains("redaction key"),
        "{e}"
    );

    let k = run(repo.path(), &["redaction-key"]);
    assert_eq!(k.code, 0, "{}", k.stderr);
    assert!(repo.path().join(".ctx/redaction.key").is_file());
    assert_eq!(
        run(repo.path(), &["redaction-key"]).code,
        1,
        "never replaces a key"
    );
    let hashed = |dir: &Path| -> String {
        let r = run(dir, &["resolve", "--role", "support"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.json()["objects"][0]["content"]["pin"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let h = hashed(repo.path());
    assert!(h.starts_with("hmac-sha256:"), "{h}");
    use sha2::Digest;
    let unsalted = hex::encode(sha2::Sha256::digest(b"4821"));
    assert!(
        !h.contains(&unsalted),
        "an unkeyed digest can be brute-forced"
    );
    // A clone (same key file) hashes alike; another key does not.
    let copy = tempfile::tempdir().unwrap();
    copy_tree(repo.path(), copy.path());
    assert_eq!(hashed(copy.path()), h);
    std::fs::remove_file(copy.path().join(".ctx/redaction.key")).unwrap();
    assert_eq!(run(copy.path(), &["redaction-key"]).code, 0);
    assert_ne!(hashed(copy.path()), h);
}

pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

// ---------------------------------------------------------------- 2. private content stays out of the work tree

#[test]
fn decrypted_private_content_never_lands_in_the_work_tree_by_default() {
    let Some(p) = crate::canary::PrivateRepo::new() else {
        return;
    };
    let dir = p.repo.path();
    let id = p.identity();
    let export = |extra: &[&str]| {
        // The passport is confidential: above an agent file's default ceiling, so
        // it is let in explicitly, and the private-output rule is what decides.
        let mut args = vec![
            "export",
            "--target",
            "agents-md",
            "--role",
            "owner",
            "--identity",
            &id,
            "--allow-classification",
            "confidential",
        ];
        args.extend_from_slice(extra);
        run(dir, &args)
    };
    let r = export(&[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("private"), "{}", r.stderr);
    assert!(!dir.join("AGENTS.md").exists());
    let check = export(&["--check"]);
    assert_eq!(
        check.code, 1,
        "export --check must not pass: {}",
        check.stdout
    );

    // resolve -o inside the repository refuses too; outside it is fine.
    let inside = run(
        dir,
        &[
            "resolve",
            "--role",
            "owner",
            "--identity",
            &id,
            "-o",
            "b.json",
        ],
    );
    assert_eq!(inside.code, 1, "{}", inside.stderr);
    assert!(!dir.join("b.json").exists());
    let out = tempfile::tempdir().unwrap();
    let outside = out.path().join("b.json");
    let ok = run(
        dir,
        &[
            "resolve",
            "--role",
            "owner",
            "--identity",
            &id,
            "-o",
            outside.to_str().unwrap(),
        ],
    );
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert!(std::fs::read_to_string(&outside)
        .unwrap()
        .contains(crate::canary::PRIVATE_CANARY));

    // With the explicit flag: written, and kept out of git.
    if have_git() {
        git(dir, &["init", "-q"]);
        let w = export(&["--allow-private-output"]);
        assert_eq!(w.code, 0, "{}", w.stderr);
        let exclude = std::fs::read_to_string(dir.join(".git/info/exclude")).unwrap();
        assert!(exclude.contains("/AGENTS.md"), "{exclude}");
        assert_eq!(export(&["--check", "--allow-private-output"]).code, 0);
        // A tracked target is refused even with the flag.
        std::fs::write(dir.join("CLAUDE.md"), "tracked\n").unwrap();
        git(dir, &["add", "-f", "CLAUDE.md"]);
        let t = run(
            dir,
            &[
                "export",
                "--target",
                "claude-md",
                "--role",
                "owner",
                "--identity",
                &id,
                "--allow-classification",
                "confidential",
                "--allow-private-output",
                "--force",
            ],
        );
        assert_eq!(t.code, 1, "{}", t.stderr);
        assert!(t.stderr.contains("tracks"), "{}", t.stderr);
        assert_eq!(
            std::fs::read_to_string(dir.join("CLAUDE.md")).unwrap(),
            "tracked\n"
        );
    }
}
