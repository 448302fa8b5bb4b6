#!/usr/bin/env python3
"""The floor of the per-turn benchmark (scripts/bench-turns.sh): the least
an agent loop can do for the task, with no sandbox, no store, no events.

Steps, each turn: 1. POST the history and three tool schemas to the Chat
Completions endpoint (streaming, one kept-alive connection); 2. read the
server-sent events, assembling text and tool-call fragments; 3. no call:
print the answer and stop; 4. else run each call (bash -c in the
workspace, a file read with line numbers, an exact one-time replacement)
and append its output as a tool message.

Usage: floor.py BASE_URL WORKSPACE PROMPT   (BASE_URL like http://127.0.0.1:PORT/v1)
"""

import http.client
import json
import os
import subprocess
import sys
from urllib.parse import urlparse

BASE, WS, PROMPT = sys.argv[1], sys.argv[2], sys.argv[3]
URL = urlparse(BASE)
TOOLS = [
    {"type": "function", "function": {
        "name": "bash", "description": "Run a shell command in the workspace.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                       "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a file with line numbers.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "edit_file", "description": "Replace old_string (once) with new_string.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string"}, "old_string": {"type": "string"},
            "new_string": {"type": "string"}},
            "required": ["path", "old_string", "new_string"]}}},
]


def run_tool(name, args):
    try:
        if name == "bash":
            p = subprocess.run(["bash", "-c", args["command"]], cwd=WS, capture_output=True,
                               text=True, timeout=60)
            return p.stdout + p.stderr + ("" if p.returncode == 0 else f"\n[exit {p.returncode}]")
        path = os.path.join(WS, args["path"])
        if name == "read_file":
            with open(path) as f:
                return "".join(f"{i}\t{line}" for i, line in enumerate(f, 1))
        if name == "edit_file":
            with open(path) as f:
                text = f.read()
            if text.count(args["old_string"]) != 1:
                return "error: old_string must occur exactly once"
            with open(path, "w") as f:
                f.write(text.replace(args["old_string"], args["new_string"]))
            return "edited " + args["path"]
        return f"error: no tool {name}"
    except Exception as e:  # errors are observations
        return f"error: {e}"


def stream(conn, messages):
    body = json.dumps({"model": "mock", "stream": True, "messages": messages, "tools": TOOLS}).encode()
    conn.request("POST", URL.path + "/chat/completions", body,
                 {"Content-Type": "application/json", "Authorization": "Bearer none"})
    resp = conn.getresponse()
    if resp.status != 200:
        sys.exit(f"error: the model answered {resp.status}")
    text, calls = "", {}
    for line in resp:
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            break
        for choice in json.loads(data).get("choices", []):
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                call = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] = tc.get("id") or call["id"]
                fn = tc.get("function") or {}
                call["name"] += fn.get("name") or ""
                call["arguments"] += fn.get("arguments") or ""
    resp.read()
    return text, [calls[i] for i in sorted(calls)]


def main():
    conn = http.client.HTTPConnection(URL.hostname, URL.port, timeout=60)
    messages = [{"role": "system", "content": "You are a coding agent. Use the tools."},
                {"role": "user", "content": PROMPT}]
    for _ in range(50):
        text, calls = stream(conn, messages)
        if not calls:
            print(text)
            return
        messages.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]})
        for c in calls:
            try:
                args = json.loads(c["arguments"] or "{}")
            except ValueError as e:
                out = f"error: bad arguments: {e}"
            else:
                out = run_tool(c["name"], args)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": out})
    sys.exit("error: no answer after 50 turns")


main()
