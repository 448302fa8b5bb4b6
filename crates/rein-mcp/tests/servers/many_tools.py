"""An MCP server (JSON-RPC over stdio) offering many tools, for the lazy
tools test and benchmark: `many_tools.py N` offers N tools, each with a
description and a schema of the size real servers send; one of them,
`get_weather`, is findable by what it does."""
import json
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
topics = ["issue", "pull_request", "branch", "commit", "release", "workflow",
          "label", "milestone", "comment", "review"]
verbs = ["list", "get", "create", "update", "delete"]
tools = []
for i in range(n - 1):
    topic, verb = topics[i % len(topics)], verbs[(i // len(topics)) % len(verbs)]
    tools.append({
        "name": f"{verb}_{topic}_{i}",
        "description": f"{verb.capitalize()} a {topic.replace('_', ' ')} of a repository "
                       f"(owner and name given); returns it as JSON with its fields.",
        "inputSchema": {"type": "object", "properties": {
            "owner": {"type": "string", "description": "the repository's owner"},
            "repo": {"type": "string", "description": "the repository's name"},
            "number": {"type": "integer", "description": f"the {topic}'s number"},
            "body": {"type": "string", "description": "text to set, for create and update"},
        }, "required": ["owner", "repo"]},
    })
tools.append({
    "name": "get_weather",
    "description": "Current weather (temperature, wind) for a city.",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]},
})
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, rid = m["method"], m["id"]
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "many", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": tools}
    elif method == "tools/call":
        args = m["params"].get("arguments") or {}
        r = {"content": [{"type": "text",
                          "text": "%s: %s" % (m["params"]["name"], json.dumps(args))}]}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": r}), flush=True)
