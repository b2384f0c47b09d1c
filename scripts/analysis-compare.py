#!/usr/bin/env python3
"""Compares two snapshots written by scripts/analysis-snapshot.sh (before and after a change
that must not change behaviour): every command's exit status, every `run` output buffer's
SHA-256, and every JSON document with what depends on timing or the moment left out: times,
speed-ups, dates, revisions, paths, what a time decides (a tuning search's choice other than
mode 1's, which is by digits alone; a fastest build) and what a time budget decides (the input
mathlib's search found for a math function). Numbers are equal within a relative 1e-12: the
shadow statistics are sums that the GPU accumulates with atomics in an order it chooses, so
their last bits differ from run to run of one build. Prints each difference as
`command/example: path: before -> after` and exits 1 if there is any.

Usage: scripts/analysis-compare.py BEFORE AFTER
"""
import json
import os
import re
import sys

# Keys whose values are measured times, follow from them, or name the moment and place.
TIMED = re.compile(
    r"(^|_)(time|times|timing|ms|ms_.*|noise|samples|reps|repeats_run|busy|ratio|speedup|"
    r"speedup_pct|relative|switched_off|overhead|device|devices|fastest|date|git_revision|"
    r"saved|share)($|_)"
)
# A time quoted in a note.
MS = re.compile(r"[0-9]+(\.[0-9]+)? ms")
# A tuning search's keys that its timed decisions set (all but mode 1's).
TIMED_SEARCH = ("chosen", "chosen_trial", "first_met_at")


def strip(value):
    """The JSON value without what depends on timing."""
    if isinstance(value, dict):
        out = {k: strip(v) for k, v in value.items() if not TIMED.search(k)}
        if value.get("strategy", "mode 1") != "mode 1":
            for k in TIMED_SEARCH:
                out.pop(k, None)
        if "search" in out and out["search"].get("strategy", "mode 1") != "mode 1":
            out.pop("detail", None)
        if "differing" in out and "mathlib" in out:  # a math function's check: time-budgeted
            out.pop("differing")
        return out
    if isinstance(value, list):
        return [strip(v) for v in value]
    if isinstance(value, str):  # a note quoting times
        return MS.sub("… ms", value)
    return value


def same_number(a, b):
    """Equal, or within a relative 1e-12 (see the module docs)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return False


def differences(path, a, b, out):
    """Appends `path: a -> b` for each leaf where a and b differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            differences(f"{path}.{k}", a.get(k, "<missing>"), b.get(k, "<missing>"), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            differences(f"{path}[{i}]", x, y, out)
    elif a != b and not same_number(a, b):
        out.append(f"{path}: {json.dumps(a)[:160]} -> {json.dumps(b)[:160]}")


def statuses(root):
    """command name -> status text, from status.txt."""
    out = {}
    for line in open(os.path.join(root, "status.txt")):
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("run", "shadow", "diff", "tune"):
            out[f"{parts[0]}/{parts[1]}"] = parts[2]  # rc=N or "skipped"; not the seconds
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
