#!/usr/bin/env python3
"""rein as the client under test of the MCP conformance suite.

The suite (`@modelcontextprotocol/conformance`, `client --command`) starts a
test server per scenario and runs this script with the server's URL as the
last argument, the scenario's name in MCP_CONFORMANCE_SCENARIO and, for
some scenarios, credentials in MCP_CONFORMANCE_CONTEXT (JSON). Steps:

1. A fresh REIN_HOME whose config.toml names the server `conf` at the URL,
   with an `[mcp_servers.conf.oauth]` table made from the context
   (client_id, client_secret, or private_key_pem written to a file with
   its signing_algorithm) and `elicitation = "accept-defaults"`.
2. For the auth scenarios, `rein mcp login conf`, with $BROWSER set to a
   program that opens the sign-in page and follows its redirects back to
   rein as a user who approves would (client_credentials needs none).
3. A scripted `rein exec` (the replay provider, no model) that calls the
   server's tool named for the scenario, so the server sees rein's real
   requests; for `initialize` (a server with no tools) `rein mcp list`,
   which waits for the handshake.

Environment: REIN_BIN, the rein binary (default `rein` on PATH).
"""

import json
import os
import stat
import subprocess
import sys
import tempfile

# The tool each scenario's server offers (the auth scenarios' servers all
# offer `test-tool`).
TOOLS = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}

# The client ID metadata document the suite's authorization servers accept
# as rein's (it is not fetched); rein names it only where a server
# advertises client_id_metadata_document_supported, and registers
# dynamically elsewhere.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

BROWSER = """#!/usr/bin/env python3
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=30).read()
"""


def toml_string(value):
    return json.dumps(value)


def oauth_table(home, context):
    """The lines of `[mcp_servers.conf.oauth]` for the suite's context."""
    lines = []
    if "client_id" in context:
        lines.append("client_id = %s" % toml_string(context["client_id"]))
    if "client_secret" in context:
        lines.append("client_secret = %s" % toml_string(context["client_secret"]))
    if "private_key_pem" in context:
        key = os.path.join(home, "client-key.pem")
        with open(key, "w") as f:
            f.write(context["private_key_pem"])
        os.chmod(key, 0o600)
        lines.append("private_key_file = %s" % toml_string(key))
        lines.append(
            "signing_algorithm = %s" % toml_string(context.get("signing_algorithm", "ES256"))
        )
    if context.get("name", "").startswith("auth/client-credentials"):
        lines.append('grant = "client_credentials"')
    elif "client_id" not in context:
        lines.append("client_metadata_url = %s" % toml_string(CLIENT_METADATA_URL))
    return lines


def write_config(home, url, context):
    lines = [
        "[permissions]",
        'allow = ["mcp__conf__*"]',
        "",
        "[mcp_servers.conf]",
        "url = %s" % toml_string(url),
        'elicitation = "accept-defaults"',
    ]
    table = oauth_table(home, context) if context["name"].startswith("auth/") else []
    if table:
        lines.append("")
        lines.append("[mcp_servers.conf.oauth]")
        lines.extend(table)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def run(rein, home, args):
    env = dict(os.environ)
    env["REIN_HOME"] = home
    env["BROWSER"] = os.path.join(home, "browser.py")
    workspace = os.path.join(os.path.dirname(home), "workspace")
    os.makedirs(workspace, exist_ok=True)
    done = subprocess.run([rein] + args, env=env, cwd=workspace, stdin=subprocess.DEVNULL)
    print("rein %s: exit %d" % (args[0:2], done.returncode), file=sys.stderr)
    return done.returncode


def main():
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    context.setdefault("name", scenario)
    rein = os.environ.get("REIN_BIN", "rein")
    home = os.path.join(tempfile.mkdtemp(prefix="rein-conformance-"), "home")
    os.makedirs(home)
    browser = os.path.join(home, "browser.py")
    with open(browser, "w") as f:
        f.write(BROWSER)
    os.chmod(browser, stat.S_IRWXU)
    write_config(home, url, context)

    if scenario.startswith("auth/"):
        code = run(rein, home, ["mcp", "login", "conf"])
        if code != 0:
            sys.exit(code)
    if scenario == "initialize":
        sys.exit(run(rein, home, ["mcp", "list"]))
    name, arguments = TOOLS.get(scenario, ("test-tool", {}))
    turns = [
        {"tool_calls": [{"name": "mcp__conf__" + name, "arguments": arguments}]},
        {"text": "done"},
    ]
    script = os.path.join(home, "script.json")
    with open(script, "w") as f:
        json.dump({"turns": turns}, f)
    code = run(
        rein,
        home,
        ["exec", "--json", "--provider", "replay", "--script", script, "call the tool"],
    )
    sys.exit(code)


if __name__ == "__main__":
    main()
