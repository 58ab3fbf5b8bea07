"""An independent MCP client for `ctx mcp`: the official Python SDK (mcp 2.x).

Usage: python mcp_client.py CTX_BINARY REPOSITORY
The repository is the `shop` fixture of tests/cli/mcp.rs (agent `helper`, a
confidential and a restricted customer object). Runs every check in both
protocol eras (mode="legacy" -> 2025-11-25, mode="auto" -> 2026-07-28) and
prints `N passed, M failed`; exits non-zero on any failure.
"""

import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

CONFIDENTIAL = "ACME-CONFIDENTIAL-CANARY-4411"
RESTRICTED = "VAULT-RESTRICTED-CANARY-7731"
TOOLS = {"context_status", "context_list", "context_get", "context_context",
         "context_set", "request_context", "resolve", "search"}

passed = 0
failed = []


def check(name, ok, detail=""):
    global passed
    if ok:
        passed += 1
    else:
        failed.append(f"{name}: {detail}")
        print(f"FAIL {name}: {detail}", file=sys.stderr)


def text(result):
    return "\n".join(getattr(c, "text", "") for c in result.content) + str(result.structured_content or "")


def answer(action, approve=True, typed=None):
    async def callback(context, params):
        content = None
        if action == "accept":
            content = {"approve": approve}
            message = params.message
            if "type exactly: " in message:
                content["confirm"] = typed or message.split("type exactly: ")[1].splitlines()[0]
        return types.ElicitResult(action=action, content=content)
    return callback


async def session_checks(ctx, repo, mode, want_version):
    server = StdioServerParameters(command=ctx, args=["mcp", "--agent", "helper"], cwd=repo)
    tag = f"[{mode}]"
    async with Client(server, mode=mode, elicitation_callback=answer("accept")) as c:
        check(f"{tag} version", c.protocol_version == want_version, c.protocol_version)
        tools = await c.list_tools()
        names = {t.name for t in tools.tools}
        check(f"{tag} tools", TOOLS <= names, sorted(names))
        r = await c.call_tool("context_get", {"id": "policies.refunds"})
        check(f"{tag} internal get", not r.is_error and "30 days" in text(r), text(r))
        r = await c.call_tool("context_get", {"id": "customers.acme"})
        check(f"{tag} approved get", not r.is_error and CONFIDENTIAL in text(r), text(r))
        r = await c.call_tool("context_get", {"id": "customers.vault"})
        check(f"{tag} restricted with confirmation", RESTRICTED in text(r), text(r))
        r = await c.call_tool("resolve", {"task": "refund"})
        check(f"{tag} resolve digest", "sha256:" in text(r), text(r))
        res = await c.read_resource("context://customers/customers.acme")
        body = "".join(getattr(x, "text", "") for x in res.contents)
        check(f"{tag} approved resource", CONFIDENTIAL in body, body[:200])
    for action in ("decline", "cancel"):
        async with Client(server, mode=mode, elicitation_callback=answer(action)) as c:
            r = await c.call_tool("context_get", {"id": "customers.acme"})
            check(f"{tag} {action}", r.is_error and CONFIDENTIAL not in text(r), text(r))
    async with Client(server, mode=mode, elicitation_callback=answer("accept", typed="nope")) as c:
        r = await c.call_tool("context_get", {"id": "customers.vault"})
        check(f"{tag} wrong confirmation", r.is_error and RESTRICTED not in text(r), text(r))
    # No callback: the client declares no elicitation capability.
    async with Client(server, mode=mode) as c:
        r = await c.call_tool("context_get", {"id": "customers.acme"})
        check(f"{tag} no elicitation", r.is_error and "cannot ask the user" in text(r)
              and CONFIDENTIAL not in text(r), text(r))
        r = await c.call_tool("context_get", {"id": "customers.acme", "agent": "root"})
        check(f"{tag} widening refused", r.is_error and CONFIDENTIAL not in text(r), text(r))


async def main():
    ctx, repo = sys.argv[1], sys.argv[2]
    await session_checks(ctx, repo, "legacy", "2025-11-25")
    await session_checks(ctx, repo, "auto", "2026-07-28")
    print(f"{passed} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


anyio.run(main)
