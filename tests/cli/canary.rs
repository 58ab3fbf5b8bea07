//! The canary matrix: one repository plants a unique string wherever a consumer
//! must not see — denied, out-of-scope, role-excluded, classification-denied,
//! private and invalid-governance objects, and redacted fields both inline and
//! behind `content_uri` — then every consumer-facing command runs in every output
//! format (stdout, stderr, `-o` files, export files, receipts, the audit log) and
//! no canary may appear anywhere.
//!
//! A new front end (mcp, serve) joins by adding a line to [`MATRIX`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use age::secrecy::ExposeSecret;

use crate::fail_closed::{git, have_git};
use crate::support::{ctx_in, Repo, Run};

/// Each string appears in the repository only where the `support` role (and the
/// `bot` agent, which holds it) must never see it.
pub const CANARIES: [&str; 16] = [
    "CNRY-DENIED-BODY",
    "CNRY-DENIED-TITLE",
    "CNRY-NOREAD-BODY",
    "CNRY-EXCLUDED-BODY",
    "CNRY-CLASSIFIED-BODY",
    "cnry-out-of-scope",
    "CNRY-OUT-OF-SCOPE-BODY",
    "CNRY-INVALID-GOV-BODY",
    "CNRY-INVALID-GOV-TITLE",
    "CNRY-INLINE-SSN",
    "CNRY-INLINE-EMAIL@acme.example",
    "CNRY-PIN-4821",
    "CNRY-URI-SSN",
    "CNRY-BROKEN-URI",
    "cnry-successor",
    PRIVATE_CANARY,
];

pub const PRIVATE_CANARY: &str = "CNRY-PRIVATE-PASSPORT";

/// Content an agent's door may carry only after the user approved it: never for a
/// client that declines or cannot ask (the MCP row checks it), shown to a person.
pub const GATED_CANARY: &str = "GATED-AFTER-APPROVAL-7c1e";

/// The host turn a `provider sign` row signs for.
const BINDING: &str = r#"{"run_id":"r","turn_id":"t","session_id":"s","agent_id":"bot","user_id":"u","workspace_id":"w"}"#;

/// One consumer-facing invocation. `{who}` expands to each consumer's flags,
/// `{out}` to a file outside the repository, `{in}` to a file inside it.
/// Arguments never contain a canary (a command may echo what it was given).
struct Row {
    args: &'static [&'static str],
    /// Must it succeed (Some(true)) or fail (Some(false))? None: either.
    ok: Option<bool>,
}

const fn ok(args: &'static [&'static str]) -> Row {
    Row {
        args,
        ok: Some(true),
    }
}

const fn fails(args: &'static [&'static str]) -> Row {
    Row {
        args,
        ok: Some(false),
    }
}

const fn any(args: &'static [&'static str]) -> Row {
    Row { args, ok: None }
}

const MATRIX: &[Row] = &[
    // resolve and bundle, every format, stdout and -o
    ok(&["resolve", "{who}"]),
    ok(&["resolve", "{who}", "--format", "json"]),
    ok(&["resolve", "{who}", "--format", "yaml"]),
    ok(&["resolve", "{who}", "--format", "markdown"]),
    ok(&["resolve", "{who}", "--explain"]),
    ok(&["resolve", "{who}", "--explain", "--format", "json"]),
    ok(&["resolve", "{who}", "--explain", "--format", "yaml"]),
    ok(&[
        "resolve",
        "{who}",
        "--include-historical",
        "--format",
        "json",
    ]),
    ok(&[
        "resolve",
        "{who}",
        "--task",
        "visible customer passport",
        "--limit",
        "1",
    ]),
    ok(&[
        "resolve",
        "{who}",
        "--task",
        "uri customer",
        "--min-relevance",
        "0.1",
        "--explain",
    ]),
    ok(&["resolve", "{who}", "-o", "{out}"]),
    ok(&[
        "resolve",
        "{who}",
        "--max-tokens",
        "40",
        "--format",
        "markdown",
    ]),
    any(&["resolve", "{who}", "--allow-findings", "--format", "yaml"]),
    ok(&["resolve", "{who}", "--format", "markdown", "-o", "{in}"]),
    ok(&["resolve", "{who}", "--sign", "--format", "yaml"]),
    ok(&["bundle", "{who}"]),
    ok(&["bundle", "{who}", "--format", "yaml", "-o", "{out}"]),
    ok(&["bundle", "{who}", "--format", "markdown", "--sign"]),
    ok(&["bundle", "{who}", "--explain", "--format", "yaml"]),
    ok(&["resolve", "{who}", "--sign", "--receipt", "{out}"]),
    // evidence of a signed bundle: verify, a provider envelope, the audit log
    ok(&["bundle", "{who}", "--sign", "-o", "signed.json"]),
    ok(&["verify", "signed.json"]),
    ok(&["verify", "signed.json", "--format", "json", "-o", "{out}"]),
    ok(&[
        "provider",
        "sign",
        "--bundle",
        "signed.json",
        "--binding",
        "binding.json",
        "--key",
        "canary",
        "-o",
        "{out}",
    ]),
    ok(&["audit", "show"]),
    ok(&["audit", "show", "--format", "jsonl", "-o", "{out}"]),
    // get, list, search
    ok(&["get", "c.visible", "{who}"]),
    ok(&["get", "c.visible", "{who}", "--format", "json"]),
    ok(&["get", "c.uri", "{who}", "--format", "json"]),
    fails(&["get", "c.denied", "{who}"]),
    fails(&["get", "c.invalid", "{who}"]),
    fails(&["get", "c.restricted", "{who}", "--format", "json"]),
    ok(&["get", "vault.passport", "{who}", "--format", "json"]),
    ok(&["get", "c.visible@1", "{who}", "-o", "{out}"]),
    ok(&["list", "{who}"]),
    ok(&["list", "{who}", "--format", "json", "--include-historical"]),
    ok(&["list", "{who}", "--format", "ndjson"]),
    ok(&["list", "{who}", "--format", "yaml"]),
    ok(&["list", "{who}", "--format", "json", "-o", "{out}"]),
    ok(&["search", "visible", "{who}"]),
    ok(&["search", "visible", "{who}", "--format", "json"]),
    ok(&["search", "visible", "{who}", "--format", "ndjson"]),
    ok(&["search", "visible", "{who}", "--format", "yaml"]),
    ok(&[
        "search", "customer", "{who}", "--format", "json", "-o", "{out}",
    ]),
    fails(&["search", "CNRY", "{who}"]),
    fails(&["search", "CNRY-INLINE-SSN", "{who}", "--format", "json"]),
    fails(&["search", "CNRY-DENIED-BODY", "{who}", "--format", "ndjson"]),
    // export: default files in the repository, --check, -o
    ok(&["export", "--target", "agents-md", "{who}"]),
    any(&["export", "--target", "agents-md", "{who}", "--check"]),
    ok(&[
        "export",
        "--target",
        "claude-md",
        "{who}",
        "--task",
        "visible",
    ]),
    ok(&["export", "--target", "cursor-rules", "{who}", "-o", "{out}"]),
    // graph
    ok(&["graph", "{who}"]),
    ok(&[
        "graph",
        "{who}",
        "--format",
        "json",
        "--owners",
        "--sources",
    ]),
    ok(&["graph", "{who}", "--format", "dot"]),
    ok(&["graph", "{who}", "--root", "c.old"]),
    ok(&[
        "graph", "{who}", "--format", "json", "--owners", "-o", "{out}",
    ]),
    // diff: two versions, and two revisions (when git is present)
    ok(&["diff", "c.visible@1", "c.visible@2", "{who}"]),
    ok(&[
        "diff",
        "c.visible@1",
        "c.visible@2",
        "{who}",
        "--format",
        "json",
    ]),
    fails(&["diff", "c.visible", "c.denied", "{who}"]),
    ok(&["diff", "--rev", "HEAD~1..HEAD", "{who}"]),
    ok(&["diff", "--rev", "HEAD~1..HEAD", "{who}", "--format", "json"]),
    ok(&["diff", "--rev", "HEAD~1", "{who}"]),
    // access diff: ids, field paths and reasons only, in every format
    ok(&["diff", "--rev", "HEAD~1..HEAD", "--access", "{who}"]),
    ok(&[
        "diff",
        "--rev",
        "HEAD~1..HEAD",
        "--access",
        "{who}",
        "--format",
        "json",
    ]),
    ok(&[
        "diff",
        "--rev",
        "HEAD~1..HEAD",
        "--access",
        "{who}",
        "--format",
        "github",
    ]),
    // history
    ok(&["history", "c.visible", "{who}"]),
    ok(&["history", "c.visible", "{who}", "--format", "json"]),
    ok(&["history", "c.old", "{who}"]),
    ok(&["history", "c.old", "{who}", "--format", "json"]),
    fails(&["history", "c.denied", "{who}"]),
    // writes, as dry runs
    ok(&[
        "supersede",
        "c.visible",
        "--title",
        "Next",
        "{who}",
        "--dry-run",
    ]),
    ok(&["add", "c.fresh", "--type", "note", "{who}", "--dry-run"]),
    // sign-offs: ids and paths only (an author command; no consumer flags)
    ok(&["promote", "--all", "--dry-run"]),
    ok(&[
        "add",
        "c.tagged",
        "--type",
        "note",
        "--tags",
        "a,b",
        "{who}",
        "--dry-run",
    ]),
    // real writes, last (they add objects); `add` succeeds for the first consumer
    // only (the second finds the id taken), each `supersede` succeeds
    any(&[
        "add", "c.added", "--type", "note", "--title", "Added", "{who}",
    ]),
    ok(&["supersede", "c.added", "--title", "Added again", "{who}"]),
];

/// The consumers every row runs as.
const CONSUMERS: [&[&str]; 2] = [&["--role", "support"], &["--agent", "bot"]];

const MANIFEST: &str = r#"opencontext: "1.0"
id: canary
context:
  mission: ./context/mission.md
collections:
  c: ./context/c/**
  outside: ./context/outside/**
  vault: ./private/vault/**
roles:
  support:
    include: [mission, c.*, vault.*]
    exclude: [c.excluded.*]
    max_classification: confidential
    redact:
      - path: ssn
      - path: contacts[*].email
        mode: mask
      - path: pin
        mode: hash
  owner:
    include: [mission, vault.*]
    max_classification: restricted
agents:
  bot:
    roles: [support]
audit:
  context_reads: true
  conflicts: true
extensions:
  ctx.write:
    support: [c.*]
  ctx.private:
    collections:
      vault:
        recipients: ["{recipient}"]
"#;

fn visible(version: u64, ssn: &str) -> String {
    let sup = if version > 1 {
        "supersedes: [c.visible@1]\n"
    } else {
        ""
    };
    format!(
        "id: c.visible\ntype: customer\ntitle: A visible customer\nowner: s\nversion: {version}\n{sup}\
         content:\n  name: ACME visible v{version}\n  ssn: \"{ssn}\"\n  pin: \"CNRY-PIN-4821\"\n  \
         contacts:\n    - name: Dana\n      email: CNRY-INLINE-EMAIL@acme.example\n"
    )
}

fn files() -> Vec<(&'static str, String)> {
    let md = |id: &str, extra: &str, body: &str| {
        format!("---\nid: {id}\ntype: note\nowner: s\n{extra}---\n\n{body}\n")
    };
    vec![
        (
            "context/mission.md",
            md("mission", "", "Serve customers well."),
        ),
        ("context/c/visible.yaml", visible(1, "CNRY-INLINE-SSN")),
        ("context/c/visible.v2.yaml", visible(2, "CNRY-INLINE-SSN")),
        (
            "context/c/denied.md",
            md(
                "c.denied",
                "title: CNRY-DENIED-TITLE\npermissions:\n  deny: [support]\n",
                "CNRY-DENIED-BODY",
            ),
        ),
        (
            "context/c/noread.md",
            md(
                "c.noread",
                "permissions:\n  read: [owner]\n",
                "CNRY-NOREAD-BODY",
            ),
        ),
        (
            "context/c/excluded/x.md",
            md("c.excluded.x", "", "CNRY-EXCLUDED-BODY"),
        ),
        (
            "context/c/restricted.md",
            md(
                "c.restricted",
                "classification: restricted\n",
                "CNRY-CLASSIFIED-BODY",
            ),
        ),
        (
            "context/outside/x.md",
            md("outside.cnry-out-of-scope", "", "CNRY-OUT-OF-SCOPE-BODY"),
        ),
        (
            "context/c/invalid.md",
            md(
                "c.invalid",
                "title: CNRY-INVALID-GOV-TITLE\nclassification: Public\n",
                "CNRY-INVALID-GOV-BODY",
            ),
        ),
        (
            "data/customer.json",
            "{\"name\": \"Uri Customer\", \"ssn\": \"CNRY-URI-SSN\"}\n".into(),
        ),
        (
            "data/broken.json",
            "{\"ssn\": \"CNRY-BROKEN-URI\",\n".into(),
        ),
        (
            "context/c/uri.yaml",
            "id: c.uri\ntype: customer\nowner: s\ncontent_uri: ./data/customer.json\n".into(),
        ),
        (
            "context/c/broken.yaml",
            "id: c.broken\ntype: customer\nowner: s\ncontent_uri: ./data/broken.json\n".into(),
        ),
        ("context/c/old.md", md("c.old", "", "An old note.")),
        // Confidential: a person's door shows it; an agent's only with the user's approval.
        (
            "context/c/gated.md",
            md("c.gated", "classification: confidential\n", GATED_CANARY),
        ),
        (
            "context/outside/successor.md",
            md(
                "outside.cnry-successor",
                "supersedes: [c.old]\n",
                "Its successor.",
            ),
        ),
        (
            "private/vault/passport.md",
            md(
                "vault.passport",
                "classification: confidential\n",
                &format!("Passport {PRIVATE_CANARY}"),
            ),
        ),
    ]
}

/// A repository with an encrypted private collection and the identity that opens it.
pub struct PrivateRepo {
    pub repo: Repo,
    pub keys: tempfile::TempDir,
    /// Stands in for the user's ~/.config (signing keys).
    pub config: tempfile::TempDir,
}

impl PrivateRepo {
    /// Build the canary repository: sources written, private files encrypted, a redaction key.
    pub fn new() -> Option<PrivateRepo> {
        let keys = tempfile::tempdir().unwrap();
        let id = age::x25519::Identity::generate();
        let path = keys.path().join("owner.txt");
        std::fs::write(&path, format!("{}\n", id.to_string().expose_secret())).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let manifest = MANIFEST.replace("{recipient}", &id.to_public().to_string());
        let repo = Repo::new(&[("opencontext.yaml", &manifest)]);
        for (rel, text) in files() {
            repo.write(rel, &text);
        }
        let p = PrivateRepo {
            repo,
            keys,
            config: tempfile::tempdir().unwrap(),
        };
        let enc = p.run(&["private", "encrypt"]);
        assert_eq!(enc.code, 0, "{}{}", enc.stdout, enc.stderr);
        assert_eq!(p.run(&["redaction-key"]).code, 0);
        let k = p.run(&["keys", "generate", "--id", "canary", "--declare"]);
        assert_eq!(k.code, 0, "{}{}", k.stdout, k.stderr);
        Some(p)
    }

    pub fn identity(&self) -> String {
        self.keys.path().join("owner.txt").display().to_string()
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let cfg = self.config.path();
        ctx_in(self.repo.path())
            .args(args)
            .env("HOME", cfg)
            .env("XDG_CONFIG_HOME", cfg)
            .run()
    }
}

/// Every file under `dir` (but `.git`), with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                if e.file_name() != ".git" {
                    stack.push(p);
                }
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Files that are new or changed since `before`.
fn written(dir: &Path, before: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<(PathBuf, String)> {
    snapshot(dir)
        .into_iter()
        .filter(|(p, b)| before.get(p) != Some(b))
        .map(|(p, b)| (p, String::from_utf8_lossy(&b).into_owned()))
        .collect()
}

fn leaks<'a>(text: &str, canaries: &'a [&'a str]) -> Vec<&'a str> {
    canaries
        .iter()
        .copied()
        .filter(|c| text.contains(c))
        .collect()
}

#[test]
fn no_canary_reaches_any_output_of_any_consumer_command() {
    let p = PrivateRepo::new().expect("fixture");
    let dir = p.repo.path();
    let with_git = have_git();
    if with_git {
        git(dir, &["init", "-q"]);
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "one"]);
        p.repo.write(
            "context/c/visible.v2.yaml",
            &visible(2, "CNRY-INLINE-SSN-rev"),
        );
        git(dir, &["commit", "-q", "-am", "two"]);
    }
    let mut canaries: Vec<&str> = CANARIES.to_vec();
    canaries.push("CNRY-INLINE-SSN-rev");
    p.repo.write("binding.json", BINDING);
    let sources = snapshot(dir);
    let outside = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut runs = 0;
    for (n, row) in MATRIX.iter().enumerate() {
        if !with_git && row.args.contains(&"--rev") {
            continue;
        }
        for who in CONSUMERS {
            let out = outside.path().join(format!("out-{n}-{}", who[1]));
            let inside = format!("inside-{n}-{}.md", who[1]);
            let mut args: Vec<String> = Vec::new();
            for a in row.args {
                match *a {
                    "{who}" => args.extend(who.iter().map(|s| s.to_string())),
                    "{out}" => args.push(out.display().to_string()),
                    "{in}" => args.push(inside.clone()),
                    other => args.push(other.to_string()),
                }
            }
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let r = p.run(&argv);
            runs += 1;
            if row.ok.is_some_and(|want| (r.code == 0) != want) || r.code == 2 {
                failures.push(format!(
                    "{argv:?}: exit {} (expected {:?})\n{}{}",
                    r.code, row.ok, r.stdout, r.stderr
                ));
            }
            for (stream, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
                let found = leaks(text, &canaries);
                if !found.is_empty() {
                    failures.push(format!("{argv:?} {stream} leaks {found:?}:\n{text}"));
                }
            }
            match std::fs::read_to_string(&out) {
                Ok(text) => {
                    let found = leaks(&text, &canaries);
                    if !found.is_empty() {
                        failures.push(format!("{argv:?} -o file leaks {found:?}"));
                    }
                }
                // A row naming an -o file checks it only if the command wrote one.
                Err(_) if r.code == 0 && row.args.contains(&"{out}") => {
                    failures.push(format!("{argv:?} wrote no -o file"));
                }
                Err(_) => {}
            }
        }
    }
    // Everything the commands wrote into the repository: export files, `-o` files,
    // receipts, the audit log.
    let new_files = written(dir, &sources);
    assert!(
        new_files
            .iter()
            .any(|(p, _)| p.ends_with(".ctx/audit.jsonl")),
        "the audit log was written"
    );
    assert!(
        new_files
            .iter()
            .any(|(p, _)| p.to_string_lossy().contains(".ctx/receipts/")),
        "a receipt was written"
    );
    assert!(new_files.iter().any(|(p, _)| p.ends_with("AGENTS.md")));
    for (path, text) in &new_files {
        let found = leaks(text, &canaries);
        if !found.is_empty() {
            failures.push(format!("{} leaks {found:?}", path.display()));
        }
    }
    assert!(runs >= MATRIX.len(), "{runs} runs");
    assert!(
        failures.is_empty(),
        "{} problem(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The one consumer entitled to the private object still never gets its plaintext
/// into the work tree, a receipt or the audit log.
#[test]
fn private_plaintext_reaches_stdout_only_for_its_reader() {
    let p = PrivateRepo::new().expect("fixture");
    let dir = p.repo.path();
    let sources = snapshot(dir);
    let id = p.identity();
    let r = p.run(&["resolve", "--role", "owner", "--identity", &id, "--sign"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains(PRIVATE_CANARY),
        "the reader gets it on stdout"
    );
    // The passport is confidential, above an agent file's ceiling: let in, the
    // private-output rule still keeps it out of the work tree.
    for args in [
        &[
            "export",
            "--target",
            "agents-md",
            "--role",
            "owner",
            "--identity",
            &id,
            "--allow-classification",
            "confidential",
        ][..],
        &[
            "export",
            "--target",
            "agents-md",
            "--role",
            "owner",
            "--identity",
            &id,
            "--allow-classification",
            "confidential",
            "--check",
        ],
        &[
            "resolve",
            "--role",
            "owner",
            "--identity",
            &id,
            "-o",
            "b.json",
        ],
        &[
            "bundle",
            "--role",
            "owner",
            "--identity",
            &id,
            "-o",
            "context/b.json",
            "--sign",
        ],
    ] {
        let r = p.run(args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert!(!r.stderr.contains(PRIVATE_CANARY));
    }
    for (path, text) in written(dir, &sources) {
        assert!(
            !text.contains(PRIVATE_CANARY),
            "{} holds private plaintext",
            path.display()
        );
    }
}

/// `--explain --show-out-of-scope` is the repository owner's diagnostic: it names
/// out-of-scope ids by design (issue 15 §5), so it stands outside the matrix. It
/// still never carries content, titles or redacted values.
#[test]
fn show_out_of_scope_lists_ids_but_no_content() {
    let p = PrivateRepo::new().expect("fixture");
    let content: Vec<&str> = CANARIES
        .iter()
        .copied()
        .filter(|c| c.chars().any(|ch| ch.is_ascii_uppercase()))
        .collect();
    let base = [
        "resolve",
        "--role",
        "support",
        "--explain",
        "--show-out-of-scope",
    ];
    for format in [None, Some("json")] {
        let mut args = base.to_vec();
        args.extend(format.iter().flat_map(|f| ["--format", f]));
        let r = p.run(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("cnry-out-of-scope"), "the ids are listed");
        let found = leaks(&format!("{}{}", r.stdout, r.stderr), &content);
        assert!(found.is_empty(), "{format:?}: {found:?}");
    }
}
