"""The official MCP Python SDK (mcp 2.x) against `ctx mcp` on a personal vault.

Usage: python vault_mcp_client.py CTX_BINARY VAULT_DIR PASSWORD_FILE HOME XDG_CONFIG_HOME
The vault is the one tests/cli/vault_mcp.rs makes: `visa-agent` registered, a
standard full name, a sensitive date of birth, a critical SSN. Checks seed 004's
defaults and MCP surface in both protocol eras and prints `N passed, M failed`.
"""

import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

NAME, DOB, SSN = "Cool Cucumber", "1990-06-15", "123-45-6789"
VALUES = (NAME, DOB, SSN)

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


async def decline(context, params):
    return types.ElicitResult(action="decline")


async def session_checks(server, mode):
    tag = f"[{mode}]"
    async with Client(server, mode=mode, elicitation_callback=decline) as c:
        r = await c.call_tool("context_status", {})
        check(f"{tag} read-only by default", (r.structured_content or {}).get("mode") == "read", text(r))
        r = await c.call_tool("context_set", {"id": "preferences.color", "value": "blue"})
        check(f"{tag} no write without --mode", r.is_error and "mode_denied" in text(r), text(r))
        prompts = await c.list_prompts()
        names = [p.name for p in prompts.prompts]
        check(f"{tag} prompts", names == ["form-fill", "letter-draft", "tax-prep"], names)
        p = await c.get_prompt("letter-draft", {"recipient": "the landlord", "subject": "the lease"})
        shown = "".join(getattr(m.content, "text", "") for m in p.messages)
        check(f"{tag} prompt asks through the tool", "request_context" in shown, shown)
        check(f"{tag} prompt carries no value", not any(v in shown for v in VALUES), shown)
        res = await c.read_resource("context://identity")
        body = "".join(getattr(x, "text", "") for x in res.contents)
        check(f"{tag} resource lists ids", "identity.dob" in body and "sensitive" in body, body)
        check(f"{tag} resource carries no value", not any(v in body for v in VALUES), body)
        r = await c.call_tool("request_context", {"scope": ["identity.full_name", "identity.dob"],
                                                  "purpose": "Fill a visa application"})
        t = text(r)
        check(f"{tag} declined: partial success", not r.is_error and NAME in t, t)
        check(f"{tag} declined: only that field withheld", DOB not in t and "withheld" in t, t)


async def main():
    ctx, vault, pw, home, config = sys.argv[1:6]
    server = StdioServerParameters(
        command=ctx,
        args=["mcp", "--agent", "visa-agent", "--password-file", pw],
        cwd=vault,
        env={"HOME": home, "XDG_CONFIG_HOME": config, "NO_COLOR": "1"},
    )
    await session_checks(server, "legacy")
    await session_checks(server, "auto")
    print(f"{passed} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


anyio.run(main)
