#!/usr/bin/env python3
"""A local model service for the per-turn benchmark (scripts/bench-turns.sh).

It speaks the OpenAI Chat Completions streaming protocol (POST
/v1/chat/completions with "stream": true; server-sent events over a chunked
HTTP/1.1 response, keep-alive, "data: [DONE]" at the end) and plays the
task of bench/turns/task.json. For Codex CLI (which speaks only the
Responses API) it also answers POST /v1/responses, giving every call as
Codex's one shell tool, exec_command (a read as `cat -n`, the edit as a
`sed -i`), and GET /v1/models with an empty list. It is stateless: the answer to a request is
chosen by how many tool results the request already holds (n results: the
call n+1, or the answer after the last call), so any client and any number
of runs can share one server.

Steps: 1. bind 127.0.0.1 on a free port and write the port to PORT_FILE;
2. for each request, read the JSON body, count its tool messages, stream
the next call (its arguments in two fragments) or the answer (in three-word
deltas), then a usage chunk and [DONE]; 3. append "bytes messages tools"
of each request to LOG_FILE, and keep the first request of a run (no tool
results yet) in FIRST_FILE when given.

Usage: mock_openai.py TASK_JSON PORT_FILE [LOG_FILE [FIRST_FILE]]
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TASK = json.load(open(sys.argv[1]))
PORT_FILE = sys.argv[2]
LOG_FILE = sys.argv[3] if len(sys.argv) > 3 else None
FIRST_FILE = sys.argv[4] if len(sys.argv) > 4 else None


def chunk(delta, finish=None, usage=None):
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "mock",
        "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = usage
    return "data: " + json.dumps(body) + "\n\n"


def events(done):
    """The stream answering a request that holds `done` tool results."""
    calls = TASK["calls"]
    out = [chunk({"role": "assistant", "content": ""})]
    if done < len(calls):
        call = calls[done]
        args = json.dumps(call["arguments"])
        half = len(args) // 2
        head = {"index": 0, "id": f"call_{done + 1}", "type": "function",
                "function": {"name": call["name"], "arguments": args[:half]}}
        out.append(chunk({"tool_calls": [head]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]}))
        out.append(chunk({}, "tool_calls"))
    else:
        words = TASK["answer"].split(" ")
        for i in range(0, len(words), 3):
            text = " ".join(words[i:i + 3]) + (" " if i + 3 < len(words) else "")
            out.append(chunk({"content": text}))
        out.append(chunk({}, "stop"))
    out.append(chunk(None, usage={"prompt_tokens": 1000 + 100 * done,
                                  "completion_tokens": 20, "total_tokens": 1020 + 100 * done}))
    out.append("data: [DONE]\n\n")
    return out


def as_shell(call):
    """A task call as one shell command line (for Codex's exec_command)."""
    args = call["arguments"]
    if call["name"] == "read_file":
        return "cat -n " + args["path"]
    if call["name"] == "edit_file":
        old, new = (a.replace("/", "\\/") for a in (args["old_string"], args["new_string"]))
        return f"sed -i 's/{old}/{new}/' {args['path']}"
    return args["command"]


def responses_events(done):
    """The Responses API stream answering a request holding `done` results."""
    calls = TASK["calls"]
    if done < len(calls):
        item = {"type": "function_call", "id": f"fc_{done + 1}", "call_id": f"call_{done + 1}",
                "name": "exec_command", "arguments": json.dumps({"cmd": as_shell(calls[done])})}
    else:
        item = {"type": "message", "role": "assistant", "id": "msg_1",
                "content": [{"type": "output_text", "text": TASK["answer"]}]}
    usage = {"input_tokens": 1000 + 100 * done, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 1020 + 100 * done}
    evs = [{"type": "response.created", "response": {"id": "resp_bench"}},
           {"type": "response.output_item.done", "item": item},
           {"type": "response.completed", "response": {"id": "resp_bench", "usage": usage}}]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in evs]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each event is sent when it is made, as real services do (TCP_NODELAY).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b'{"object": "list", "data": [], "models": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            req = json.loads(raw)
            responses = self.path.endswith("/responses")
            messages = req["input"] if responses else req["messages"]
        except (ValueError, KeyError):
            self.send_error(400, "expected a chat completions or responses request")
            return
        if responses:
            done = sum(1 for m in messages if m.get("type") == "function_call_output")
        else:
            done = sum(1 for m in messages if m.get("role") == "tool")
        if LOG_FILE:
            with open(LOG_FILE, "a") as f:
                f.write(f"{len(raw)} {len(messages)} {len(req.get('tools') or [])}\n")
        if FIRST_FILE and done == 0:
            with open(FIRST_FILE, "wb") as f:
                f.write(raw)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for ev in responses_events(done) if responses else events(done):
            data = ev.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
