//! EXAMPLES of the personal vault, private collections and Context Layer exchange commands.

use super::Example;

/// The examples of this group's commands; None for a command of another group.
pub(super) fn examples(path: &[&str]) -> Option<&'static [Example]> {
    Some(match path {
        ["serve"] => &[
            ("ctx serve", "Serve this personal vault on http://127.0.0.1:7200 (locked until POST /context/unlock)."),
            (
                "ctx serve --listen 127.0.0.1:0 --idle-timeout 10m --no-prompt",
                "A free port (printed first on stderr), auto-lock after ten idle minutes, approvals only via ctx approvals.",
            ),
            (
                "ctx serve --listen 127.0.0.1:7300 --no-prompt",
                "With extensions.ctx.exchange: the Context Layer binding (GET /.well-known/context-layer, /context/v1/requests, bundles, receipts, memory-proposals); per-launch tokens in ~/.config/ctx/serve/context-layer-7300.json.",
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
        ["private", "upgrade-vault"] => &[(
            "ctx private upgrade-vault --password-file pw.txt",
            "List what a vault from before authentication holds, then authenticate it once you answer yes.",
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
        ["exchange", "purge"] => &[(
            "ctx exchange purge",
            "Delete the stored context of expired, revoked or source-deleted bundles, keeping ids and digests.",
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
        _ => return None,
    })
}
