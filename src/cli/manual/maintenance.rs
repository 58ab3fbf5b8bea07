//! EXAMPLES of the commands that keep a repository: keys, verify, audit, provider, doctor, conflicts, stale, hook, history, diff, graph, add, supersede, promote, export, redaction-key, fmt, completions.

use super::Example;

/// The examples of this group's commands; None for a command of another group.
pub(super) fn examples(path: &[&str]) -> Option<&'static [Example]> {
    Some(match path {
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
        ["audit", "show"] => &[
            ("ctx audit show --limit 20", "The last twenty audit events."),
            (
                "ctx audit show --password-file pw.txt",
                "On a personal vault: its sealed log decrypted too.",
            ),
        ],
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
        ["provider", "auth"] | ["provider", "auth", "init"] => &[(
            "ctx provider auth init --provider ctx --instance local",
            "Create the request key a delegated host signs with, and an empty nonce ledger.",
        )],
        ["provider", "auth", "rotate"] => &[(
            "ctx provider auth rotate --overlap 60",
            "Activate a fresh request key; the previous one is accepted for another minute.",
        )],
        ["provider", "auth", "revoke"] => &[(
            "ctx provider auth revoke request-0123456789abcdef01234567",
            "Stop accepting the previous request key now.",
        )],
        ["provider", "serve"] => &[(
            "ctx provider serve --agent support-agent --key release-bot",
            "Answer an authenticated host on 127.0.0.1:8788 with signed context for one agent.",
        )],
        ["provider", "conformance"] => &[(
            "ctx provider conformance delegated-request-auth-v1.json",
            "Run the request-authentication vectors and list each result.",
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
        ["promote"] => &[
            ("ctx promote policies.refunds", "Sign off the canonical or approved authority policies.refunds declares (after a hand edit, or for an object that predates sign-offs)."),
            ("ctx promote policies.refunds --authority canonical --dry-run", "Check that policies.refunds declares canonical and show the sign-off that would be recorded."),
            ("ctx promote --all", "Sign off every canonical and approved object that has no sign-off yet (a repository that predates sign-offs starts keeping them)."),
        ],
        ["supersede"] => &[(
            "ctx supersede policies.refunds --content \"Within 60 days.\" --dry-run",
            "Show the next version that would replace the current one.",
        )],
        ["export"] => &[
            ("ctx export --target agents-md --role support", "Write AGENTS.md from what the support role may see."),
            ("ctx export --target agents-md --role support --check", "Fail in CI when AGENTS.md is out of date."),
            ("ctx export --target cursor-rules --role support", "Write .cursor/rules/opencontext.mdc (front matter first, then the marker)."),
            ("ctx export --target agents-md --role support --per-folder", "One AGENTS.md per folder of extensions.ctx.export.folders, each with that folder's objects."),
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
        _ => return None,
    })
}
