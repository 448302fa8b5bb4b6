#!/usr/bin/env python3
"""The functions a profiled run executed, as a linker symbol-ordering file.

Usage: scripts/text-order.py BINARY OLD_LIST CALLGRIND_OUT... > NEW_LIST

Each CALLGRIND_OUT is valgrind's callgrind output of BINARY, recorded with
--dump-instr=yes (scripts/text-order.sh makes them). Every instruction
address a profile charges to BINARY is mapped to the function symbol
holding it (from `nm`); the functions are written once each, in the order
of their addresses in BINARY, so code that sat together stays together.
Then come the names of OLD_LIST (a file, possibly empty or missing) that
BINARY still defines and the profiles did not reach: code another run
took is kept together too. Prints to stderr how much code the profiles
executed and over how many pages it lay in BINARY.
"""
import bisect
import os
import re
import subprocess
import sys

NAME_REF = re.compile(r"\((\d+)\)(?: (.*))?")
COST_LINE = re.compile(r"^(0x[0-9a-fA-F]+|[+-]\d+|\*)\s")


def executed_addresses(profile, binary):
    """Instruction addresses callgrind charged to objects named `binary`."""
    objects, current, last = {}, None, 0
    found = set()
    with open(profile) as f:
        for line in f:
            if line.startswith(("ob=", "cob=")):
                key, value = line.rstrip("\n").split("=", 1)
                m = NAME_REF.match(value)
                name = value
                if m:
                    if m.group(2) is not None:
                        objects[m.group(1)] = m.group(2)
                    name = objects.get(m.group(1), "")
                if key == "ob":
                    current = name
                continue
            m = COST_LINE.match(line)
            if not m:
                continue
            tok = m.group(1)
            if tok.startswith("0x"):
                last = int(tok, 16)
            elif tok != "*":
                last += int(tok)
            # Lines after `calls=` are call sites, executed as well.
            if current == binary:
                found.add(last)
    return found


def function_symbols(binary):
    out = subprocess.run(
        ["nm", "--defined-only", "-S", binary], check=True, capture_output=True, text=True
    ).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            syms.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    syms.sort()
    return syms


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: text-order.py BINARY OLD_LIST CALLGRIND_OUT...")
    binary, old_list = os.path.realpath(sys.argv[1]), sys.argv[2]
    addrs = set()
    for profile in sys.argv[3:]:
        found = executed_addresses(profile, binary)
        if not found:
            sys.exit(f"error: {profile} charges nothing to {binary}")
        addrs |= found
    syms = function_symbols(binary)
    starts = [s[0] for s in syms]
    hit = {}
    for a in addrs:
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and syms[i][0] <= a < syms[i][0] + max(syms[i][1], 1):
            hit[syms[i][0]] = syms[i]
    listed = set()
    for _, _, name in sorted(hit.values()):
        print(name)
        listed.add(name)
    defined = {name for _, _, name in syms}
    old = open(old_list).read().split() if os.path.exists(old_list) else []
    for name in old:
        if name in defined and name not in listed:
            print(name)
            listed.add(name)
    size = sum(s[1] for s in hit.values())
    pages = {a >> 12 for a in addrs}
    windows = {a >> 16 for a in addrs}
    print(
        f"{len(hit)} functions, {size / 1e6:.2f} MB of code; before ordering they lay on "
        f"{len(pages) * 4 / 1024:.1f} MiB of 4 KiB pages, {len(windows) * 64 / 1024:.1f} MiB of 64 KiB windows",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
