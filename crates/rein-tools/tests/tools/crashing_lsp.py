"""A language server that answers the handshake, then exits on the first
document it is sent (with a second argument `--silent`: says nothing
more, and stays); each start appends a line to the file named by its
first argument."""

import json
import sys

with open(sys.argv[1], "a") as log:
    log.write("start\n")


def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if line.strip() == b"":
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def send(obj):
    body = json.dumps(obj).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


while True:
    msg = read()
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {}}})
    elif msg.get("method") == "textDocument/didOpen" and "--silent" not in sys.argv:
        sys.exit(3)
