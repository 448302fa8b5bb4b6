#!/usr/bin/env python3
"""Import circles inside one crate: the strongly connected groups of its
modules, where module A "imports" B when A's source names `crate::B`
(or `super::B` from a child file resolving to B).

Usage: scripts/import-cycles.py [CRATE_SRC]   (default crates/rein-cli/src)

Prints each group of more than one top-level module, largest first, and the
size of the largest; exits 1 when a group is larger than --max (default 5).
"""
import argparse
import os
import re
import sys

USE_RE = re.compile(r"\bcrate::(\w+)")


def top_modules(src):
    mods = {}
    for name in os.listdir(src):
        path = os.path.join(src, name)
        if name.endswith(".rs") and name not in ("main.rs", "lib.rs"):
            mods.setdefault(name[:-3], []).append(path)
    for name in os.listdir(src):
        path = os.path.join(src, name)
        if os.path.isdir(path):
            for base, _, files in os.walk(path):
                for f in files:
                    if f.endswith(".rs"):
                        mods.setdefault(name, []).append(os.path.join(base, f))
    return mods


def edges(mods):
    graph = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            text = open(f, encoding="utf-8", errors="replace").read()
            text = re.sub(r"//[^\n]*", "", text)
            for target in USE_RE.findall(text):
                if target in mods and target != m:
                    graph[m].add(target)
    return graph


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", nargs="?", default="crates/rein-cli/src")
    ap.add_argument("--max", type=int, default=5)
    args = ap.parse_args()
    groups = sorted((g for g in sccs(edges(top_modules(args.src))) if len(g) > 1), key=len, reverse=True)
    for g in groups:
        print(f"{len(g)}: {' '.join(g)}")
    largest = len(groups[0]) if groups else 1
    print(f"largest import circle: {largest} modules")
    return 1 if largest > args.max else 0


if __name__ == "__main__":
    sys.exit(main())
