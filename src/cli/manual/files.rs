//! FILES: what each command reads or writes.

use super::File;

const MANIFEST: File = (
    "opencontext.yaml",
    "The manifest (also opencontext.yml or opencontext.json), found by searching upward from the current folder, or given with -C. Every path it names is relative to its folder, and nothing outside that folder is read.",
);
const OBJECTS: File = (
    "context/",
    "The object files (.md, .markdown, .yaml, .yml, .json) named by the manifest's context and collections entries (ctx init puts them under context/). Hidden files and files .gitignore ignores are skipped.",
);
const SIGNOFFS: File = (
    ".ctx/signoffs/ID.json",
    "Sign-offs of canonical and approved authority (add --promote, supersede, promote); commit them: validate warns on an object without one.",
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
const PROVIDER_AUTH: File = (
    "~/.config/ctx/provider-auth/",
    "Request authentication of ctx provider serve (--auth DIR elsewhere): keyring.json, one 0600 secret file per request key, the nonce ledger nonces.json; mode 0700.",
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

/// The files the command at `path` reads or writes.
pub(super) fn files(path: &[&str]) -> Vec<File> {
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
        ["provider", "auth", ..] | ["provider", "conformance"] => vec![PROVIDER_AUTH],
        ["provider", "serve"] => with(&[RECEIPTS, AUDIT, KEYS, PROVIDER_AUTH]),
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
                "The review queue: proposals context_set records (never a direct write), reviewed with ctx proposals; reviews/ holds each one's steps.",
            ),
        ]),
        ["mcp", "install"] => vec![
            MANIFEST,
            (
                ".mcp.json, .cursor/mcp.json, .vscode/mcp.json, .codex/config.toml, .zed/settings.json, .gemini/settings.json, .github/mcp.json",
                "The project files --write merges into (beside the manifest; shared through git, so they name no path of this machine).",
            ),
            (
                "~/.claude.json, ~/.cursor/mcp.json, ~/.codex/config.toml, ~/.codeium/windsurf/mcp_config.json, ~/.gemini/settings.json, ~/.copilot/mcp-config.json",
                "User files (--scope user), one ctx-<manifest id> entry per repository.",
            ),
            (
                "~/.config/Claude/claude_desktop_config.json, ~/.config/Code/User/mcp.json, ~/.config/zed/settings.json",
                "Claude Desktop's, VS Code's and Zed's user files on Linux (macOS: ~/Library/Application Support/Claude and …/Code/User; Windows: %APPDATA%).",
            ),
        ],
        ["completions"] => COMPLETION_FILES.to_vec(),
        ["private", "export-identity"] | ["private", "upgrade-vault"] => with(&[VAULT_KEY]),
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
            (
                "~/.config/ctx/serve/context-layer-PORT.json",
                "Written by ctx serve when the manifest has extensions.ctx.exchange (0600, removed on exit): one ctxcl_ bearer token per requester and one for the operator.",
            ),
            EXCHANGE_STATE,
            (
                ".ctx/exchange/idempotency/",
                "The first answer to each Idempotency-Key of the Context Layer binding, written atomically and never replaced.",
            ),
            LOCK,
        ]),
        ["approvals", ..] => vec![MANIFEST, SERVE_CONTROL],
        _ => repo,
    }
}
