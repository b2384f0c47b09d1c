#!/usr/bin/env bash
# The overhead benchmark of `mantissa shadow` (docs/BENCHMARKS.md, "Shadow analysis"): every
# shipped example (f64 and f32 variants) under each analysis alone and all three, two passes of
# the whole loop, each cell `mantissa shadow SPEC --analysis A --time --json` (median of 5 timed
# runs after a warm-up, as written and instrumented). Writes OUT/shadow-bench.jsonl (one line per
# cell: pass, spec, analysis, timing, registers, or the error) and prints the table.
# Usage: [PASSES=2] [ANALYSES="exceptions demotion"] [SPECS="a.toml b.toml"] scripts/bench-shadow.sh MANTISSA OUT [EXTRA_ARGS...]
#        (e.g. --set n=4194304; ANALYSES defaults to each analysis alone and all three, SPECS to
#        every shipped example)
set -uo pipefail
bin=${1:?mantissa binary}; out=${2:?output directory}; shift 2
mkdir -p "$out"; log="$out/shadow-bench.jsonl"; : > "$log"
specs=${SPECS:-$(ls examples/kernels/*/*.toml)}
for pass in $(seq 1 "${PASSES:-2}"); do
  for spec in $specs; do
    for a in ${ANALYSES:-exceptions demotion shadow demotion,shadow,exceptions}; do
      "$bin" shadow "$spec" --analysis "$a" --time --json "$@" >/tmp/bench-out 2>/tmp/bench-err
      rc=$?
      python3 - "$pass" "$spec" "$a" "$rc" >> "$log" <<'PY'
import json, sys
p, spec, a, rc = sys.argv[1:5]
row = {"pass": int(p), "spec": spec, "analysis": a, "rc": int(rc)}
try:
    d = json.load(open("/tmp/bench-out"))
    row["timing"] = d.get("timing"); row["resources"] = d.get("resources")
except ValueError:
    row["error"] = open("/tmp/bench-err").read().strip().splitlines()[-1:]
print(json.dumps(row))
PY
    done
  done
done
python3 - "$log" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cols = ["exceptions", "demotion", "shadow", "demotion,shadow,exceptions"]
cell = {}
for r in rows:
    t = r.get("timing") or {}
    cell.setdefault((r["spec"], r["analysis"]), []).append(
        "%.1fx" % t["ratio"] if t.get("ratio") else ("error" if r.get("error") or r["rc"] else "-"))
    if t.get("original_ms"): cell.setdefault((r["spec"], "ms"), t["original_ms"])
print("| program | as written | " + " | ".join(cols) + " |")
for spec in sorted({r["spec"] for r in rows}):
    ms = cell.get((spec, "ms"))
    print("| %s | %s | %s |" % (spec.split("/")[-1][:-5], "%.3g ms" % ms if ms else "-",
          " | ".join(", ".join(cell.get((spec, c), [])) for c in cols)))
PY
