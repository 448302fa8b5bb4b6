#!/usr/bin/env python3
"""Size check: no Rust source file over 600 lines, no function over 120.

Usage: scripts/size-check.py [ROOT]   (ROOT defaults to the repository)

Prints one line per file or function over its limit and exits 1 when there
is any. A function's length runs from its `fn` line to the line that closes
its body, found by counting braces outside strings, chars and comments.
"""
import os
import re
import sys

FILE_LIMIT = 600
FN_LIMIT = 120
FN_RE = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def strip_code(line, state):
    """Returns the line with strings, chars and comments blanked.

    `state` carries a block comment or raw/normal string across lines."""
    out = []
    i = 0
    n = len(line)
    while i < n:
        if state["block"]:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), state
            state["block"] -= 1
            i = end + 2
            continue
        if state["raw"] is not None:
            end = line.find('"' + "#" * state["raw"], i)
            if end < 0:
                return "".join(out), state
            i = end + 1 + state["raw"]
            state["raw"] = None
            continue
        if state["str"]:
            while i < n:
                if line[i] == "\\":
                    i += 2
                    continue
                if line[i] == '"':
                    state["str"] = False
                    i += 1
                    break
                i += 1
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] += 1
            i += 2
            continue
        m = re.match(r'b?r(#*)"', line[i:])
        if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            state["raw"] = len(m.group(1))
            i += len(m.group(0))
            continue
        if c == '"':
            state["str"] = True
            i += 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|[^\\'])'", line[i:])
            if m:
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out), state


def check_file(path):
    problems = []
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > FILE_LIMIT:
        problems.append(f"{path}: {len(lines)} lines (limit {FILE_LIMIT})")
    state = {"block": 0, "raw": None, "str": False}
    depth = 0
    open_fns = []  # (name, start_line, depth_before_body)
    pending = None  # fn seen, body brace not yet opened
    for no, raw in enumerate(lines, 1):
        m = FN_RE.match(raw) if not state["block"] and state["raw"] is None and not state["str"] else None
        code, state = strip_code(raw, state)
        if m:
            pending = (m.group(7), no, depth)
        for ch in code:
            if ch == "{":
                if pending is not None and depth == pending[2]:
                    open_fns.append(pending)
                    pending = None
                depth += 1
            elif ch == "}":
                depth -= 1
                if open_fns and depth == open_fns[-1][2]:
                    name, start, _ = open_fns.pop()
                    length = no - start + 1
                    if length > FN_LIMIT:
                        problems.append(f"{path}:{start}: fn {name} is {length} lines (limit {FN_LIMIT})")
            elif ch == ";" and pending is not None and depth == pending[2]:
                pending = None  # a declaration without a body
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = []
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("target", ".git", "node_modules")]
        for name in sorted(files):
            if name.endswith(".rs"):
                problems += check_file(os.path.relpath(os.path.join(base, name), root))
    for p in sorted(problems):
        print(p)
    if problems:
        print(f"size-check: {len(problems)} over the limits", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.chdir(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.argv = sys.argv[:1]
    sys.exit(main())
