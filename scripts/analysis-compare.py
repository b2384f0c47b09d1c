#!/usr/bin/env python3
"""Compares two snapshots written by scripts/analysis-snapshot.sh (before and after a change
that must not change behaviour): every command's exit status, every `run` output buffer's
SHA-256, and every JSON document with what depends on timing left out (times, speed-ups and
what a time decides: the order of timed candidates, a fastest build). Prints each difference
as `command/example: path: before -> after` and exits 1 if there is any.

Usage: scripts/analysis-compare.py BEFORE AFTER
"""
import json
import os
import re
import sys

# Keys whose values are measured times or follow from them.
TIMED = re.compile(
    r"(^|_)(time|times|timing|ms|ms_.*|noise|samples|reps|repeats_run|busy|ratio|speedup|"
    r"speedup_pct|relative|switched_off|overhead|device|devices|fastest)($|_)"
)


def strip(value):
    """The JSON value without what depends on timing."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if not TIMED.search(k)}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def differences(path, a, b, out):
    """Appends `path: a -> b` for each leaf where a and b differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            differences(f"{path}.{k}", a.get(k, "<missing>"), b.get(k, "<missing>"), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            differences(f"{path}[{i}]", x, y, out)
    elif a != b:
        out.append(f"{path}: {json.dumps(a)[:160]} -> {json.dumps(b)[:160]}")


def statuses(root):
    """command name -> status text, from status.txt."""
    out = {}
    for line in open(os.path.join(root, "status.txt")):
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("run", "shadow", "diff", "tune"):
            out[f"{parts[0]}/{parts[1]}"] = " ".join(parts[2:])
    return out


def main(before, after):
    found = []
    sb, sa = statuses(before), statuses(after)
    for cell in sorted(set(sb) | set(sa)):
        if sb.get(cell) != sa.get(cell):
            found.append(f"{cell}: status {sb.get(cell)} -> {sa.get(cell)}")
    for command in ("run", "shadow", "diff", "tune"):
        d = os.path.join(before, command)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            a_path, b_path = os.path.join(d, name), os.path.join(after, command, name)
            if not os.path.isfile(a_path) or not os.path.exists(b_path):
                continue
            if name.endswith(".sha256"):
                if open(a_path).read() != open(b_path).read():
                    found.append(f"{command}/{name}: output buffers differ")
            elif name.endswith(".json"):
                try:
                    a, b = json.load(open(a_path)), json.load(open(b_path))
                except ValueError:
                    continue  # a failed command: its status is compared above
                out = []
                differences("", strip(a), strip(b), out)
                found.extend(f"{command}/{name}: {d}" for d in out)
    for line in found:
        print(line)
    print(f"{len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
