#!/usr/bin/env python3
"""A minimal client of `rein exec --input-format stream-json`, standard
library only.

    from rein_stream import Rein
    with Rein(["--mode", "default"], approve=lambda request: True) as rein:
        print(rein.ask("What does this project do?"))
        print(rein.ask("Now add a test for it."))

Each `ask` sends one message and returns the run's final answer; events
are passed to `on_event`; `approve(request)` answers each approval
request (True: once, False: deny). Run as a script, it sends each
argument as a message and prints the answers.
"""

import json
import subprocess
import sys


class Rein:
    def __init__(self, args=(), approve=lambda request: False, on_event=None, rein="rein"):
        self.approve = approve
        self.on_event = on_event or (lambda event: None)
        self.proc = subprocess.Popen(
            [rein, "exec", "--input-format", "stream-json", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        ready = self._next()
        if ready.get("type") != "ready" or ready.get("version") != 1:
            raise RuntimeError(f"not a rein stream: {ready}")

    def _send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def _next(self):
        line = self.proc.stdout.readline()
        if not line:
            raise EOFError("rein ended")
        return json.loads(line)

    def ask(self, text):
        """Send a message; the run's final answer."""
        self._send({"type": "user", "message": {"role": "user", "content": text}})
        while True:
            event = self._next()
            self.on_event(event)
            kind = event.get("type")
            if kind == "approval_required":
                request = event["request"]
                decision = "approve" if self.approve(request) else "deny"
                self._send({"type": "approval", "call_id": request["call_id"], "decision": decision})
            elif kind == "input_error":
                raise ValueError(event["error"])
            elif kind == "stopped":
                return event.get("final_text", "")

    def interrupt(self):
        self._send({"type": "interrupt"})

    def close(self):
        """Close the session; rein's exit code."""
        self.proc.stdin.close()
        return self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


if __name__ == "__main__":
    extra = []
    if "--" in sys.argv:
        at = sys.argv.index("--")
        extra, messages = sys.argv[at + 1 :], sys.argv[1:at]
    else:
        messages = sys.argv[1:]
    with Rein(extra) as rein:
        for message in messages:
            print(rein.ask(message))
