//! EXAMPLES of the commands that read and resolve: validate, resolve, bundle, get, list, search, schema, conformance, init, mcp, version.

use super::Example;

/// The examples of this group's commands; None for a command of another group.
pub(super) fn examples(path: &[&str]) -> Option<&'static [Example]> {
    Some(match path {
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
            ("ctx mcp -C vault --agent visa-agent --password-file ~/.ctx-pw --scope 'identity.*,addresses.current'", "Serve a personal vault to one consumer, within a scope; sensitive fields wait for the user's approval in the client."),
        ],
        ["mcp", "install"] => &[
            ("ctx mcp install --host claude-code --agent support-agent", "Print the .mcp.json entry that starts ctx mcp for Claude Code."),
            ("ctx mcp install --host vscode --agent support-agent --dry-run", "Show, as a unified diff, what merging it into .vscode/mcp.json would change."),
            ("ctx mcp install --host cursor --agent support-agent --write", "Merge the entry into .cursor/mcp.json, keeping every other byte of the file."),
            ("ctx mcp install --host claude-desktop --agent support-agent --write", "Add this repository's entry (ctx-<id>) to the user-wide Claude Desktop file."),
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
        _ => return None,
    })
}
