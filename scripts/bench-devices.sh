#!/usr/bin/env bash
# The multi-GPU benchmark of issue 24 (docs/BENCHMARKS.md): the same GPU work on GPU 0 alone,
# on GPUs 0,1 and on all of them, with parallel efficiency T1 / (N * TN) and where the time went
# (each GPU's units and busy seconds, from the `pool:` line the commands print with several GPUs).
#
# Each command runs once untimed on GPU 0 first, so every timed run finds the compile and JIT
# caches warm: the figures are the runs' own work, not first compiles. Selections the host lacks
# (0,1 on one GPU) are skipped and said so. Writes OUT/bench-devices.jsonl (one line per run)
# and OUT/<command>-<devices>/ (each run's records and stderr), and prints the table.
#
# Usage: scripts/bench-devices.sh MANTISSA OUT
#   STUDY_ARGS   (default "--quick --backend gpu")      what `mantissa study` runs
#   MATHLIB_ARGS (default "--libraries none")           what `mantissa mathlib` runs (GPU columns)
#   TUNE_ARGS    (default: relax at 800,000 steps, trials of about 100 ms or more; modes 2 and 3,
#                the baseline and the exhaustive search)  what `mantissa tune` runs
#   COMMANDS     (default "study mathlib tune")         which of them to time
set -uo pipefail
bin=${1:?mantissa binary}; out=${2:?output directory}
mkdir -p "$out"; log="$out/bench-devices.jsonl"; : > "$log"
study_args=${STUDY_ARGS:---quick --backend gpu}
mathlib_args=${MATHLIB_ARGS:---libraries none}
tune_args=${TUNE_ARGS:-examples/tune/relax.toml --set steps=800000 --mode 2,3 --baseline --exhaustive --repeats 5 --max-repeats 10}

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${gpus:-0}" -lt 1 ]; then
  echo "bench-devices: no GPU (nvidia-smi -L lists none): nothing to time" >&2
  exit 1
fi
selections="0"
if [ "$gpus" -ge 2 ]; then selections="$selections 0,1"; else echo "skipping 0,1: this host has $gpus GPU" >&2; fi
if [ "$gpus" -ge 3 ]; then selections="$selections all"; else echo "skipping all: the same as $(echo $selections | tr ' ' '\n' | tail -1) on $gpus GPU(s)" >&2; fi

args_of() {
  case "$1" in
    study) echo "$study_args" ;;
    mathlib) echo "$mathlib_args" ;;
    tune) echo "$tune_args" ;;
  esac
}

for cmd in ${COMMANDS:-study mathlib tune}; do
  # Warm-up: fills the caches (and is not timed).
  # shellcheck disable=SC2046
  "$bin" "$cmd" $(args_of "$cmd") --devices 0 --out "$out/$cmd-warmup" >/dev/null 2>"$out/$cmd-warmup.stderr" \
    || { echo "bench-devices: $cmd failed on GPU 0 (see $out/$cmd-warmup.stderr)" >&2; continue; }
  for sel in $selections; do
    dir="$out/$cmd-${sel//,/-}"
    rm -rf "$dir"
    start=$(date +%s.%N)
    # shellcheck disable=SC2046
    "$bin" "$cmd" $(args_of "$cmd") --devices "$sel" --out "$dir" >/dev/null 2>"$dir.stderr"
    rc=$?
    end=$(date +%s.%N)
    python3 - "$cmd" "$sel" "$gpus" "$start" "$end" "$rc" "$dir.stderr" >> "$log" <<'PY'
import json, sys
cmd, sel, gpus, start, end, rc, err = sys.argv[1:8]
n = int(gpus) if sel == "all" else len(sel.split(","))
pool = [l.strip() for l in open(err, errors="replace") if l.startswith("pool:")]
print(json.dumps({"command": cmd, "devices": sel, "n": n, "seconds": float(end) - float(start),
                  "rc": int(rc), "pool": pool[-1] if pool else None}))
PY
  done
done

python3 - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
one = {r["command"]: r["seconds"] for r in rows if r["devices"] == "0" and r["rc"] == 0}
print("| command | devices | GPUs | seconds | efficiency T1/(N·TN) |")
print("|---|---|---:|---:|---:|")
for r in rows:
    t1 = one.get(r["command"])
    eff = "%.0f%%" % (100 * t1 / (r["n"] * r["seconds"])) if t1 and r["rc"] == 0 else "-"
    secs = "%.1f" % r["seconds"] if r["rc"] == 0 else "failed (rc %d)" % r["rc"]
    print("| %s | %s | %d | %s | %s |" % (r["command"], r["devices"], r["n"], secs, eff))
for r in rows:
    if r["pool"]:
        print("%s --devices %s: %s" % (r["command"], r["devices"], r["pool"]))
PY
