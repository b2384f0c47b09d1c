#!/usr/bin/env bash
# The benchmark of `mantissa tune` (docs/BENCHMARKS.md, "Mixed-precision tuning"): seed 002's
# Table 4 and Table 5 on mantissa's own programs — every f64 example plus examples/tune/relax —
# at 3, 6 and 9 digits and 5, 10, 15, 20 % of the ideal speed-up, modes 1–3 and the
# delta-debugging baseline, each program one `mantissa tune ... --json` (its store and
# configurations under OUT/NAME). Writes OUT/tune-bench.jsonl (one line per program: the run,
# or its error) and prints the summary: the all-f32 speed-up, mode 2's best % of the ideal at
# 3 digits with its trials, the baseline's, and the ratio of trials.
# Usage: [TUNE_TIMEOUT=seconds] [TUNE_ARGS='--set n=...'] scripts/bench-tune.sh MANTISSA OUT [SPEC...]   (default: the programs above)
set -uo pipefail
bin=${1:?mantissa binary}; out=${2:?output directory}; shift 2
mkdir -p "$out"; log="$out/tune-bench.jsonl"; : > "$log"
specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
  specs=(examples/tune/relax.toml examples/kernels/nbody/nbody.toml examples/kernels/heat2d/heat2d.toml
         examples/kernels/options/options.toml examples/kernels/gauss/gauss.toml)
fi
for spec in "${specs[@]}"; do
  name=$(basename "$spec" .toml)
  start=$(date +%s.%N)
  timeout "${TUNE_TIMEOUT:-3600}" "$bin" tune "$spec" --digits 3,6,9 --speedup 5,10,15,20 --mode 1,2,3 --baseline \
      --out "$out/$name" --json ${TUNE_ARGS:-} >"$out/$name.json" 2>"$out/$name.err"
  rc=$?
  end=$(date +%s.%N)
  python3 - "$spec" "$rc" "$out/$name.json" "$out/$name.err" "$start" "$end" >> "$log" <<'PY'
import json, sys
spec, rc, path, err, start, end = sys.argv[1:7]
row = {"spec": spec, "rc": int(rc), "wall_s": float(end) - float(start)}
try:
    row["run"] = json.load(open(path))
except ValueError:
    row["error"] = open(err).read().strip().splitlines()[-1:]
print(json.dumps(row))
PY
done
python3 - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def cell(s):
    t = s["search"].get("chosen_trial")
    n = s["search"]["trials"]
    return ("%.1f%% (%d)" % (t["speedup_pct"], n)) if t and t.get("speedup_pct") is not None else "– (%d)" % n
print("| program | f64 ms | all-f32 | FISets | variables | mode 2 @ 3 digits, 5/10/15/20% | baseline @ 3 digits, 5/10/15/20% | device trials | wall s |")
print("|---|---:|---:|---:|---:|---|---|---:|---:|")
for r in rows:
    name = r["spec"].split("/")[-1][:-5]
    run = r.get("run")
    if not run:
        print("| %s | error: %s |" % (name, " ".join(r.get("error", [])))); continue
    ref = run["references"]
    t64, t32 = ref["t64"]["median_ms"], ref["t32"]["median_ms"]
    by = lambda strat: [s for s in run["searches"] if s["search"]["strategy"] == strat
                        and s["search"]["thresholds"]["error"] == {"digits": 3.0}]
    print("| %s | %.3f | %.2f× | %d | %d | %s | %s | %d | %.0f |" % (
        name, t64, t64 / t32, len(run["fisets"]), len(run["variables"]),
        ", ".join(cell(s) for s in by("mode 2")), ", ".join(cell(s) for s in by("delta debugging")),
        run["device_trials"], r["wall_s"]))
PY
