#!/usr/bin/env python3
"""Checks the layer rule: a file under src/<layer>/ includes only its own layer
and the layers below it.

Layers, lowest first: common -> record -> protocol -> log -> recovery ->
coordinator -> {broker, tools}. broker and tools are siblings and never include each other;
only src/main.cc sees both. Prints one line per violation (file:line, the
include, why) and exits 1 if there is any; exit 0 otherwise.
Usage: scripts/check-layers.py [source root, default: the repository]
"""
import os
import re
import sys

RANK = {"common": 0, "record": 1, "protocol": 2, "log": 3, "recovery": 4, "coordinator": 5,
        "broker": 6, "tools": 6}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    src = os.path.join(root, "src")
    problems = []
    checked = 0
    for layer in sorted(RANK):
        for folder, _, files in os.walk(os.path.join(src, layer)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(folder, name)
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in RANK:
                            continue
                        target = m.group(1)
                        rel = os.path.relpath(path, root)
                        if RANK[target] > RANK[layer]:
                            problems.append(f"{rel}:{number}: includes {target}/, a higher layer than {layer}/")
                        elif RANK[target] == RANK[layer] and target != layer:
                            problems.append(f"{rel}:{number}: includes {target}/, a sibling of {layer}/")
    for p in problems:
        print(p)
    print(f"check-layers: {checked} files, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
