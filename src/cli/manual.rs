//! The hand-written parts of the man pages: EXAMPLES and FILES for each command.
//! Everything else on a page is generated from the clap definition; these two
//! sections say what no flag description can (how commands combine, what they read
//! and write). Examples use the names a `ctx init` repository has (roles `support`
//! and `leads`, agent `support-agent`, `policies.refunds`), and the test suite runs
//! them against one, so they stay true.

/// One example: the command line and what it does.
pub type Example = (&'static str, &'static str);

/// One file a command reads or writes, and why.
pub type File = (&'static str, &'static str);

const MANIFEST: File = (
    "opencontext.yaml",
    "The manifest (also opencontext.yml or opencontext.json), found by searching upward from the current folder, or given with -C. Every path it names is relative to its folder, and nothing outside that folder is read.",
);
const OBJECTS: File = (
    "context/",
    "The object files (.md, .markdown, .yaml, .yml, .json) named by the manifest's context and collections entries (ctx init puts them under context/). Hidden files and files .gitignore ignores are skipped.",
);
const LOCK: File = (
    ".git/ctx-write.lock",
    "Serialises commands that write to the repository (outside git, a lock file in the temporary folder).",
);
const RECEIPTS: File = (
    ".ctx/receipts/, .ctx/bundles/",
    "Signed receipts and the bundles they describe (with --sign; verified by ctx verify).",
);
const AUDIT: File = (
    ".ctx/audit.jsonl, .ctx/audit.head",
    "The hash-chained audit log and its head, when the manifest's audit block enables auditing (extensions ctx.audit or audit.sink may move it).",
);
const KEYS: File = (
    "~/.config/ctx/keys/ID.pem",
    "Private signing keys ($XDG_CONFIG_HOME/ctx/keys when set). Never inside a repository; the public halves are declared in the manifest under extensions ctx.keys.",
);
const AGE_IDENTITY: File = (
    "~/.config/ctx/age/identity.txt",
    "The age identity that opens private collections ($CTX_AGE_IDENTITY or --identity take precedence).",
);
const HOOK: File = (
    ".git/hooks/pre-commit",
    "The hook ctx hook install writes (core.hooksPath is honoured); a replaced foreign hook is kept as pre-commit.bak.",
);
const PARSE_CACHE: File = (
    ".git/ctx/parse-cache",
    "Parsed objects of staged files, keyed by content, so validate --staged stays fast (CTX_NO_CACHE=1 turns it off).",
);
const EXCHANGE_STATE: File = (
    ".ctx/exchange/",
    "Context Layer state: requests, decisions, approvals, bundles, provenance maps, proposals and pending receipts (content-addressed, written atomically, never replaced), the hash-chained receipt log receipts.jsonl and its signed anchor receipts.anchor.jsonl.",
);
const VAULT_KEY: File = (
    "~/.config/ctx/personal/VAULT.key",
    "A personal vault's secret key (0600, written by ctx init --template personal); with the password it derives every key. Never inside the repository.",
);
const SERVE_CONTROL: File = (
    "~/.config/ctx/personal/VAULT.serve.json",
    "Written by a running ctx serve (0600, removed on exit): its address and the control token ctx approvals uses.",
);
const SIGNOFFS: File = (
    ".ctx/signoffs/ID.json",
    "Sign-offs of canonical and approved authority (add --promote, supersede, promote); commit them: validate warns on an object without one.",
);
const NO_FILES: File = ("(none)", "This command reads no repository file.");

/// Where a shell looks for the script `ctx completions` prints.
const COMPLETION_FILES: [File; 3] = [
    (
        "~/.local/share/bash-completion/completions/ctx",
        "bash (with the bash-completion package): ctx completions bash > that file.",
    ),
    (
        "~/.zfunc/_ctx",
        "zsh: any folder on $fpath; add fpath+=~/.zfunc before compinit in ~/.zshrc.",
    ),
    (
        "~/.config/fish/completions/ctx.fish",
        "fish: loaded automatically from that folder.",
    ),
];

/// The examples for the command at `path` (e.g. `["keys", "generate"]`; empty for `ctx`).
pub fn examples(path: &[&str]) -> &'static [Example] {
    match path {
        [] => &[
            ("ctx init support-context --yes", "Create a repository that passes validate --strict."),
            ("ctx validate --strict", "Check the repository found upward from here; exit 1 on any finding."),
            ("ctx resolve --role support --task \"refund request\" --explain", "Show what the support role would be given for a task, and why."),
            ("ctx bundle --agent support-agent --output bundle.json", "Write the full bundle for an agent."),
            ("ctx fmt --check", "Fail when an object file is not in canonical form (for CI)."),
        ],
        ["validate"] => &[
            ("ctx validate", "Check the manifest and every object; exit 1 on errors."),
            ("ctx validate --strict", "Fail on warnings too (the form for CI and pre-commit)."),
            ("ctx validate --format github", "Report findings as GitHub Actions annotations."),
            ("ctx validate --format sarif", "Report findings as SARIF for code-scanning tools."),
            ("ctx validate --staged", "Check exactly what the next commit records."),
            ("ctx validate context/policies", "Report only findings in one folder (the whole repository is still checked)."),
        ],
        ["resolve"] => &[
            ("ctx resolve --role support --task \"refund request\" --explain", "Why each object is included, excluded or outranked."),
            ("ctx resolve --agent support-agent --task \"refund\" --format markdown", "The context as Markdown, ready for a prompt."),
            ("ctx resolve --role support --at 2026-01-31 --explain", "What the role saw at the end of a past day."),
            ("ctx resolve --role support --explain --show-out-of-scope", "Also list (ids only) the objects outside the role's scope."),
            ("ctx resolve --role leads --include policies.* --limit 5", "Narrow to one subtree and keep the five most relevant objects."),
        ],
        ["mcp"] => &[
            ("ctx mcp --agent support-agent", "Serve the repository to an MCP client over stdio as the support agent (exits when stdin closes)."),
            ("ctx mcp --role support --offline", "Serve as a role, never reaching the network."),
        ],
        ["mcp", "install"] => &[
            ("ctx mcp install --client claude-code --agent support-agent", "Print the .mcp.json entry that starts ctx mcp for Claude Code."),
            ("ctx mcp install --client cursor --agent support-agent --write", "Merge the entry into .cursor/mcp.json, keeping every other server."),
        ],
        ["bundle"] => &[
            ("ctx bundle --role support --output bundle.json", "Write the bundle document for a role."),
            ("ctx bundle --agent support-agent --task \"refund\" --sign --output .ctx/bundles/refund.json", "Write a bundle and a signed receipt (needs a declared key)."),
        ],
        ["get"] => &[
            ("ctx get policies.refunds", "Print an object as stored."),
            ("ctx get policies.refunds --role support", "Print it as the support role may see it (redactions applied)."),
            ("ctx get policies.refunds --format json", "The same, as JSON."),
            ("ctx get policies.refunds --role support --identity ~/.config/ctx/age/identity.txt", "Decrypt it first when it is private and the role may read it (redactions applied)."),
        ],
        ["list"] => &[
            ("ctx list --role support", "The objects a role may see."),
            ("ctx list --type policy --format json", "All policies, as JSON."),
            ("ctx list --format ndjson --at 2026-12-01", "One JSON object per line with its `lifecycle` on 1 December (pipe to `jq -r 'select(.lifecycle==\"stale\") | .id'`)."),
        ],
        ["search"] => &[
            ("ctx search refund --role support", "Search only what the support role may read."),
            ("ctx search \"escalation threshold\" --limit 5", "The five best matches across the repository."),
        ],
        ["schema"] => &[
            ("ctx schema", "List the embedded JSON Schemas."),
            ("ctx schema object", "Print the object schema."),
        ],
        ["conformance"] => &[(
            "ctx conformance ../shared/reference/opencontext/fixtures",
            "Run the official OpenContext conformance suite.",
        )],
        ["init"] => &[
            ("ctx init support-context --yes", "Create a repository in a new folder, taking every default."),
            ("ctx init --id acme --name \"Acme support\" --yes", "Create one here with a chosen namespace and name."),
            ("ctx init --git --yes", "Create one in a new git work tree, with a .gitignore for ctx's per-machine state."),
            (
                "ctx init --template personal --password-file pw.txt vault",
                "A personal vault (seed 004's ten encrypted categories); the secret key goes to your config folder.",
            ),
        ],
        ["version"] => &[("ctx version", "The tool version and the OpenContext version it implements.")],
        ["keys"] | ["keys", "generate"] => &[(
            "ctx keys generate --id release-bot --declare",
            "Create a signing key and trust its public half in this repository.",
        )],
        ["keys", "list"] => &[("ctx keys list", "Your local keys and the keys this repository trusts.")],
        ["keys", "declare"] => &[(
            "ctx keys declare release-bot",
            "Trust a key you made without --declare in this repository's manifest.",
        )],
        ["verify"] => &[
            ("ctx verify .ctx/bundles/refund.json", "Check a bundle's digest, its signed receipt and the signing key."),
            ("ctx verify --digest-only bundle.json", "Only recompute a bundle's digest."),
        ],
        ["audit"] | ["audit", "verify"] => &[(
            "ctx audit verify",
            "Check the audit log's hash chain and head.",
        )],
        ["audit", "show"] => &[("ctx audit show --limit 20", "The last twenty audit events.")],
        ["provider"] | ["provider", "sign"] => &[(
            "ctx provider sign --binding turn.json --key release-bot --bundle bundle.json --output envelope.json",
            "Sign a delegated-provider envelope for one host turn.",
        )],
        ["provider", "verify"] => &[(
            "ctx provider verify envelope.json --trust trust.json --binding turn.json",
            "Verify an envelope the way a host would.",
        )],
        ["provider", "trust"] => &[(
            "ctx provider trust --key release-bot",
            "Print the registration a host needs to trust a local key.",
        )],
        ["doctor"] => &[
            ("ctx doctor", "Findings, per-collection health and a score from 0 to 100."),
            ("ctx doctor --strict --min-score 95", "Fail CI below a score, or on any warning."),
            ("ctx doctor --format github", "Findings as GitHub Actions annotations."),
            ("ctx doctor --at 2026-12-01", "What will be stale or expired by a date."),
        ],
        ["conflicts"] => &[(
            "ctx conflicts --strict",
            "Fail on duplicate canonical objects, declared conflicts or broken supersession.",
        )],
        ["stale"] => &[
            ("ctx stale", "Context that is stale, expired, not yet valid or overdue for review."),
            ("ctx stale --strict --at 2026-12-01", "Fail if anything will be stale by a date."),
        ],
        ["hook"] | ["hook", "install"] => &[
            ("ctx hook install", "Run ctx validate --staged before every commit."),
            ("ctx hook install --strict", "The same, failing on warnings too."),
        ],
        ["hook", "uninstall"] => &[("ctx hook uninstall", "Remove the hook ctx installed.")],
        ["history"] => &[("ctx history policies.refunds", "Declared versions of an object, then the commits that touched it.")],
        ["diff"] => &[
            ("ctx diff pricing.enterprise@1 pricing.enterprise@2", "Compare two versions of an object."),
            ("ctx diff --rev main..HEAD", "Objects added, removed and changed on a branch; promotions highlighted."),
            ("ctx diff --rev v1.0 --exit-code", "Exit 1 when the work tree differs from a tag."),
            ("ctx diff --rev main..HEAD --access", "What the branch lets each role and agent see: objects, redacted fields, ceilings."),
            ("ctx diff --rev origin/main..HEAD --access --format github", "The same as a pull-request comment (Markdown)."),
        ],
        ["graph"] => &[
            ("ctx graph --root policies.refunds --depth 2", "The objects within two links of one."),
            ("ctx graph --format dot --owners", "The whole graph with owners, for Graphviz."),
        ],
        ["add"] => &[
            ("ctx add policies.returns --type policy --title \"Returns\" --owner support --source https://wiki.example/returns --content \"Within 14 days.\"", "Write a new object (checked before anything touches disk)."),
            ("ctx add policies.returns --type policy --canonical-source --content \"Within 14 days.\" --dry-run", "Show what would be written, and write nothing."),
        ],
        ["supersede"] => &[(
            "ctx supersede policies.refunds --content \"Within 60 days.\" --dry-run",
            "Show the next version that would replace the current one.",
        )],
        ["promote"] => &[
            ("ctx promote policies.refunds", "Sign off the canonical or approved authority policies.refunds declares (after a hand edit, or for an object that predates sign-offs)."),
            ("ctx promote policies.refunds --authority canonical --dry-run", "Check that policies.refunds declares canonical and show the sign-off that would be recorded."),
            ("ctx promote --all", "Sign off every canonical and approved object that has no sign-off yet (a repository that predates sign-offs starts keeping them)."),
        ],
        ["export"] => &[
            ("ctx export --target agents-md --role support", "Write AGENTS.md from what the support role may see."),
            ("ctx export --target agents-md --role support --check", "Fail in CI when AGENTS.md is out of date."),
        ],
        ["redaction-key"] => &[(
            "ctx redaction-key",
            "Create .ctx/redaction.key so `mode: hash` redactions match in every clone (commit it).",
        )],
        ["fmt"] => &[
            ("ctx fmt", "Rewrite every object file into canonical form."),
            ("ctx fmt --check", "List the files that would change and exit 1 (for CI); writes nothing."),
            ("ctx fmt context/policies", "Format only the object files under one folder."),
        ],
        ["completions"] => &[
            ("ctx completions bash", "Print the bash script (see FILES for where it goes)."),
            ("ctx completions zsh", "Print the zsh script, to be saved as _ctx on $fpath."),
            ("ctx completions fish", "Print the fish script."),
        ],
        ["serve"] => &[
            ("ctx serve", "Serve this personal vault on http://127.0.0.1:7200 (locked until POST /context/unlock)."),
            (
                "ctx serve --listen 127.0.0.1:0 --idle-timeout 10m --no-prompt",
                "A free port (printed first on stderr), auto-lock after ten idle minutes, approvals only via ctx approvals.",
            ),
            ("ctx serve --explain-sandbox", "What process hardening is, and is not, in effect here."),
        ],
        ["approvals"] | ["approvals", "list"] => &[(
            "ctx approvals list",
            "Questions the running ctx serve is waiting on: consumer, purpose, fields, proposed values as inert text.",
        )],
        ["approvals", "approve"] => &[
            ("ctx approvals approve apr_cdab9165", "Let the waiting read or write of a sensitive field go ahead."),
            (
                "ctx approvals approve apr_cdab9165 --confirm identity.ssn",
                "A critical field: the second factor is its id, retyped (or --password-file).",
            ),
        ],
        ["approvals", "deny"] => &[("ctx approvals deny apr_cdab9165", "Refuse it: the consumer gets 403 approval_denied.")],
        ["private", "export-identity"] => &[(
            "ctx private export-identity --category identity --password-file pw.txt",
            "Print the age identity derived for one category, so `age -d -i` can open its field files.",
        )],
        ["private"] | ["private", "status"] => &[(
            "ctx private status",
            "Which private files are encrypted, and to whom.",
        )],
        ["private", "encrypt"] => &[("ctx private encrypt", "Encrypt every clear member of the private collections.")],
        ["private", "decrypt"] => &[(
            "ctx private decrypt private/vault/passport.md",
            "Print one encrypted member's plaintext (never written to disk).",
        )],
        ["private", "edit"] => &[(
            "ctx private edit private/vault/passport.md",
            "Edit an encrypted member in $EDITOR; it is re-encrypted on save.",
        )],
        ["private", "rekey"] => &[(
            "ctx private rekey",
            "Re-encrypt files whose recipients changed in the manifest.",
        )],
        ["request"] | ["request", "new"] => &[
            ("ctx request new --as support-agent --purpose-code draft.response --task draft_only --select refund-rules --action model.generate_text -o refunds.json", "Write a Context Layer request for the refund rules (0.2-draft; --spec-version 0.1-draft for the older form)."),
        ],
        ["request", "validate"] => &[("ctx request validate request.json", "Check a request: schema, expiry, purpose code, wildcards, receipts, requester.")],
        ["request", "evaluate"] => &[
            ("ctx request evaluate request.json --format json", "Decide a request against ctx.exchange and the requester's resolved view; exit 0 allow, 4 deny, 5 needs_approval."),
            ("ctx request evaluate lead-request.json --approval approval.json -o lead-decision.json", "Evaluate again with a person's approval (used once)."),
        ],
        ["approve"] => &[
            ("ctx approve lead-request.json --show", "Show who asks for what, why, for whom and for how long, and write nothing."),
            ("ctx approve lead-request.json --yes -o my-approval.json", "Approve the gated part without a prompt (bound to the request and policy, single-use, expiring)."),
        ],
        ["exchange"] | ["exchange", "issue"] => &[(
            "ctx exchange issue decision.json -o issued.json",
            "Issue the signed, recipient-bound, single-use bundle a decision grants.",
        )],
        ["exchange", "open"] => &[(
            "ctx exchange open bundle.json --as support-agent",
            "Open a bundle once as its recipient: checks, then a bundle.consume receipt, then the context.",
        )],
        ["exchange", "exec"] => &[(
            "ctx exchange exec opened.json --as support-agent --action model.generate_text -- wc -c",
            "Run a command as a granted action of an opened bundle (the context arrives on stdin).",
        )],
        ["exchange", "revoke"] => &[(
            "ctx exchange revoke bundle.json --reason \"sent to the wrong agent\"",
            "Revoke a bundle: later opens, actions and proposals are refused.",
        )],
        ["exchange", "policy"] => &[(
            "ctx exchange policy --as support-agent",
            "The policy object and snapshot digest a requester's decisions are made on.",
        )],
        ["exchange", "keys"] => &[(
            "ctx exchange keys t-bundle --purpose bundle",
            "Print a key's public half as a ctx.exchange.keys entry to paste into the manifest.",
        )],
        ["receipts"] | ["receipts", "list"] => &[("ctx receipts list", "Every Context Layer receipt, oldest first.")],
        ["receipts", "show"] => &[("ctx receipts show urn:cl:receipt:ID", "One receipt, by id.")],
        ["receipts", "verify"] => &[("ctx receipts verify", "Check the receipt log's hash chain and its signed anchor (rollback, rewrite, unanchored suffix).")],
        ["receipts", "retry"] => &[("ctx receipts retry", "Store completion receipts left pending by an indeterminate outcome (idempotent).")],
        ["receipts", "supersede"] => &[(
            "ctx receipts supersede urn:cl:receipt:ID --outcome failure --summary \"the draft was never sent\"",
            "Correct a receipt by appending one that supersedes it (the log is never rewritten).",
        )],
        ["propose"] => &[(
            "ctx propose proposal.json --bundle opened.json --as support-agent",
            "Submit agent-written memory through an opened bundle that grants memory.propose.",
        )],
        ["proposals"] | ["proposals", "list"] => &[("ctx proposals list", "Memory proposals and their state.")],
        ["proposals", "show"] => &[("ctx proposals show urn:cl:proposal:ID", "One proposal with its claims and provenance check.")],
        ["proposals", "approve"] => &[("ctx proposals approve urn:cl:proposal:ID", "Accept a validated proposal for commit.")],
        ["proposals", "reject"] => &[("ctx proposals reject urn:cl:proposal:ID --reason \"contradicted by the signed policy\"", "Reject a proposal (recorded with a receipt).")],
        ["proposals", "expire"] => &[("ctx proposals expire urn:cl:proposal:ID", "Expire a proposal nobody will review.")],
        ["proposals", "commit"] => &[(
            "ctx proposals commit urn:cl:proposal:ID --dry-run",
            "Show the object versions an approved proposal would write (without --dry-run: write them through the governed write path).",
        )],
        ["discover"] => &[(
            "ctx discover \"refund policy\" --as support-agent",
            "Ask whether the repository holds something like the query, revealing only what policy allows.",
        )],
        _ => &[],
    }
}

/// The files the command at `path` reads or writes.
pub fn files(path: &[&str]) -> Vec<File> {
    let repo = vec![MANIFEST, OBJECTS];
    let with = |extra: &[File]| {
        let mut v = repo.clone();
        v.extend_from_slice(extra);
        v
    };
    match path {
        [] => with(&[LOCK, RECEIPTS, AUDIT, KEYS, AGE_IDENTITY, HOOK]),
        ["validate"] => with(&[PARSE_CACHE]),
        ["resolve"] | ["bundle"] => with(&[RECEIPTS, KEYS, AGE_IDENTITY, AUDIT]),
        ["schema"] | ["version"] => vec![NO_FILES],
        ["conformance"] => vec![(
            "SUITE/conformance.json",
            "The suite's index; each case's repository and expected result sit beside it.",
        )],
        ["init"] => vec![
            (
                "DIR/opencontext.yaml",
                "The new manifest (an existing file is kept unless --force).",
            ),
            (
                "DIR/context/",
                "The first objects: a mission, two policies and a procedure.",
            ),
            (
                "DIR/personal/",
                "With --template personal: the ten encrypted category folders (a vault is never overwritten).",
            ),
            VAULT_KEY,
        ],
        ["keys", ..] => with(&[KEYS]),
        ["verify"] => with(&[RECEIPTS, KEYS]),
        ["audit", ..] => with(&[AUDIT]),
        ["provider", ..] => vec![KEYS],
        ["hook", ..] => vec![HOOK],
        ["history"] | ["diff"] => {
            with(&[(".git/", "Earlier states of the repository, read with git.")])
        }
        ["add"] | ["supersede"] | ["promote"] => with(&[LOCK, SIGNOFFS]),
        ["fmt"] => with(&[LOCK]),
        ["export"] => with(&[(
            "AGENTS.md, CLAUDE.md, .cursor/rules/opencontext.mdc",
            "The file --target names, beside the manifest (or --output).",
        )]),
        ["redaction-key"] => with(&[(
            ".ctx/redaction.key",
            "The secret that keys `mode: hash` redaction (HMAC-SHA256); created once, never replaced.",
        )]),
        ["mcp"] => with(&[
            RECEIPTS,
            AUDIT,
            AGE_IDENTITY,
            (
                ".ctx/proposals/",
                "Memory-update proposals context_set records for review (never a direct write).",
            ),
        ]),
        ["mcp", "install"] => vec![
            MANIFEST,
            (
                ".mcp.json, .cursor/mcp.json",
                "The Claude Code and Cursor project configurations --write merges into (beside the manifest).",
            ),
            (
                "~/.config/Claude/claude_desktop_config.json",
                "Claude Desktop's configuration (~/Library/Application Support/Claude on macOS).",
            ),
        ],
        ["completions"] => COMPLETION_FILES.to_vec(),
        ["private", "export-identity"] => with(&[VAULT_KEY]),
        ["private", ..] => with(&[AGE_IDENTITY]),
        ["request", ..] | ["approve"] | ["receipts", ..] | ["discover"] => {
            with(&[EXCHANGE_STATE, KEYS, LOCK])
        }
        ["exchange", ..] | ["propose"] | ["proposals", ..] => {
            with(&[EXCHANGE_STATE, KEYS, LOCK, AUDIT])
        }
        ["serve"] => with(&[
            VAULT_KEY,
            (
                "personal/CATEGORY/",
                "The field files: age-encrypted, one per field, rewritten atomically on every write.",
            ),
            (
                ".ctx/personal/",
                "The encrypted token store and the sealed, hash-chained audit log of the vault.",
            ),
            SERVE_CONTROL,
            LOCK,
        ]),
        ["approvals", ..] => vec![MANIFEST, SERVE_CONTROL],
        _ => repo,
    }
}

/// Escape text for roff: backslashes, hyphens (so they stay ASCII), and a leading
/// `.` or `'` that would be read as a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// The EXAMPLES and FILES sections of the page for `path`, in roff.
pub fn sections(path: &[&str]) -> String {
    let mut out = String::new();
    let examples = examples(path);
    if !examples.is_empty() {
        out.push_str(".SH EXAMPLES\n");
        for (line, what) in examples {
            out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(line), roff(what)));
        }
    }
    out.push_str(".SH FILES\n");
    for (name, what) in files(path) {
        out.push_str(&format!(".TP\n\\fI{}\\fR\n{}\n", roff(name), roff(what)));
    }
    out
}

/// Insert the sections into a page clap_mangen rendered: before VERSION (the
/// conventional place, after the options), else at the end.
pub fn add_sections(page: &str, path: &[&str]) -> String {
    let extra = sections(path);
    match page.find("\n.SH VERSION\n") {
        Some(i) => format!("{}\n{}{}", &page[..i], extra, &page[i + 1..]),
        None => format!("{page}{extra}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    /// Split a command line like a shell would for these examples (double quotes only).
    pub fn words(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut any = false;
        for c in line.chars() {
            match c {
                '"' => {
                    quoted = !quoted;
                    any = true;
                }
                ' ' if !quoted => {
                    if any {
                        out.push(std::mem::take(&mut cur));
                        any = false;
                    }
                }
                c => {
                    cur.push(c);
                    any = true;
                }
            }
        }
        if any {
            out.push(cur);
        }
        out
    }

    fn paths() -> Vec<Vec<String>> {
        fn walk(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
            out.push(prefix.clone());
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                if sub.get_name() == "help" {
                    continue;
                }
                let mut p = prefix.clone();
                p.push(sub.get_name().to_string());
                walk(sub, p, out);
            }
        }
        let mut out = Vec::new();
        walk(&crate::cli::Cli::command(), Vec::new(), &mut out);
        out
    }

    #[test]
    fn every_example_parses_and_belongs_to_its_page() {
        for path in paths() {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            for (line, _) in examples(&path) {
                let argv = words(line);
                assert_eq!(argv[0], "ctx", "{line}");
                if let Err(e) = crate::cli::Cli::try_parse_from(&argv) {
                    panic!("man page example `{line}` does not parse:\n{e}");
                }
                // The page of `ctx keys` may show `ctx keys generate`; never another command.
                let named: Vec<&str> = argv[1..]
                    .iter()
                    .map(String::as_str)
                    .filter(|w| !w.starts_with('-'))
                    .take(path.len())
                    .collect();
                if !path.is_empty() {
                    assert_eq!(
                        named[0],
                        path[0],
                        "`{line}` is on the page of `ctx {}`",
                        path.join(" ")
                    );
                }
            }
        }
    }

    #[test]
    fn every_visible_command_has_examples() {
        let missing: Vec<String> = paths()
            .into_iter()
            .filter(|p| {
                let p: Vec<&str> = p.iter().map(String::as_str).collect();
                examples(&p).is_empty()
            })
            .map(|p| format!("ctx {}", p.join(" ")))
            .collect();
        assert!(
            missing.is_empty(),
            "add EXAMPLES for these commands in src/cli/manual.rs: {missing:?}"
        );
    }

    #[test]
    fn roff_escaping() {
        assert_eq!(roff("a-b \\ c"), "a\\-b \\e c");
        assert_eq!(roff(".hidden"), "\\&.hidden");
        let page = ".TH x 1\n.SH OPTIONS\n.SH VERSION\nv1\n";
        let out = add_sections(page, &["fmt"]);
        let ex = out.find(".SH EXAMPLES").unwrap();
        assert!(out.find(".SH OPTIONS").unwrap() < ex);
        assert!(ex < out.find(".SH FILES").unwrap());
        assert!(out.find(".SH FILES").unwrap() < out.find(".SH VERSION").unwrap());
    }
}
