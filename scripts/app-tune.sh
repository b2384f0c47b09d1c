#!/usr/bin/env bash
# `mantissa tune -- APP` on the example applications, on a GPU machine (issue 39): builds
# examples/apps/orbits (arithmetic-bound: all-pairs gravity, f64 square roots and divisions)
# and examples/apps/reactor (launch- and memory-bound) with the device's nvcc as a user would
# (-lineinfo added for source lines), times each against its f32 twin, tunes each with modes 1-3
# and the delta-debugging baseline at 3 digits, then re-runs every configuration a tuning run
# saved in a fresh process (`mantissa run --demote CFG -- APP`); traces the reactor and replays
# the trace; explains each against itself with every cause switched (`mantissa diff -- APP`).
# Results go to OUT as they come (summary.txt first), each step under `timeout` within BUDGET
# seconds.
#
# Needs .gpu/bin/mantissa and .gpu/libmantissa_attach.so (beside it in .gpu/bin as well).
# SKIP_TRACE=1 and SKIP_DIFF=1 leave those steps out.
# Usage: [BUDGET=seconds] [ORBITS_ARGS="32768 0.01"] [REACTOR_ARGS="1024 5"] bash scripts/app-tune.sh OUT
set -u
out=${1:?usage: bash scripts/app-tune.sh OUT}
mkdir -p "$out"; out=$(cd "$out" && pwd)
start=$(date +%s); budget=${BUDGET:-540}
summary=$out/summary.txt; : > "$summary"
say() { echo "$*" | tee -a "$summary"; }
left() { echo $(( budget - ($(date +%s) - start) )); }
mantissa=$(realpath .gpu/bin/mantissa)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
work=$(mktemp -d /tmp/app-tune.XXXX)
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
orbits_args=${ORBITS_ARGS:-32768 0.01}
reactor_args=${REACTOR_ARGS:-1024 5}

for v in "orbits:orbits:" "orbits_f32:orbits:-DREAL=float" "reactor:reactor:" "reactor_f32:reactor:-DREAL=float"; do
  IFS=: read -r name src flags <<< "$v"
  if timeout 180 "$nvcc" -O3 -arch=sm_90 -lineinfo $flags -o "$work/$name" "examples/apps/$src/$src.cu" > "$out/nvcc-$name.log" 2>&1
  then say "PASS build $name ($flags)"; else say "FAIL build $name: $(tail -2 "$out/nvcc-$name.log")"; fi
done

# The program and its f32 twin as they are: what the source in f32 costs and buys.
for name in orbits orbits_f32; do
  for i in 1 2; do timeout 60 "$work/$name" $orbits_args > "$out/$name-plain-$i.out" 2>&1; done
  say "$name $orbits_args: $(tr '\n' ' ' < "$out/$name-plain-2.out")"
done
for name in reactor reactor_f32; do
  timeout 60 "$work/$name" $reactor_args > "$out/$name-plain.out" 2>&1
  say "$name $reactor_args: $(tr '\n' ' ' < "$out/$name-plain.out")"
done

# tune APP ARGS...: a tuning run (its options: TUNE_OPTS, DIGITS, SPEEDUPS), then every distinct
# configuration it saved re-run in a fresh process, its digits (−log10 of the largest relative
# error of any output against the baseline) set beside the tuner's for the same configuration.
tune() {
  local app=$1; shift
  local t=$(left); [ "$t" -le 30 ] && { say "SKIP tune $app: budget spent"; return; }
  local s=$(date +%s)
  timeout "$t" "$mantissa" tune --out "$out/tune-$app" --digits "${DIGITS:-3}" \
    --speedup "${SPEEDUPS:-5,10,15,20}" --mode "${MODES:-1,2,3}" --baseline --trial-timeout 60 \
    "${TUNE_OPTS[@]}" -- "$work/$app" "$@" > "$out/tune-$app.txt" 2> "$out/tune-$app.err"
  local rc=$?
  say "tune $app $*: rc=$rc in $(( $(date +%s) - s )) s; $(tail -1 "$out/tune-$app.err")"
  declare -A seen=()
  for cfg in "$out/tune-$app"/configs/*.json; do
    [ -f "$cfg" ] || continue
    local sum=$(grep -v '"name"' "$cfg" | md5sum | cut -c1-12)
    [ -n "${seen[$sum]:-}" ] && continue; seen[$sum]=1
    t=$(left); [ "$t" -le 20 ] && { say "SKIP re-runs of $app: budget spent"; return; }
    local name=$(basename "$cfg" .json)
    timeout "$t" "$mantissa" run --json --demote "$cfg" --out "$work/rerun-$app-$name" \
      "${TUNE_OPTS[@]}" -- "$work/$app" "$@" > "$out/rerun-$app-$name.json" 2> "$out/rerun-$app-$name.err"
    say "re-run $app $name: rc=$? $(python3 - "$out/rerun-$app-$name.json" "$cfg" "$out/tune-$app/results.jsonl" <<'PY'
import json, math, sys
run = json.load(open(sys.argv[1]))["configurations"][0]
errs = [g["against_baseline"]["max_rel"] for g in run["copies"] if g["against_baseline"]]
errs += [abs(p["value"] - p["baseline"]) / abs(p["baseline"]) for p in run["printed"]]
worst = max(errs) if errs else 0.0
digits = math.inf if worst == 0 else max(0.0, -math.log10(worst))
tuned = {}
for line in open(sys.argv[3]):
    r = json.loads(line)
    if r.get("precision") == "accuracy":
        d = r["extra"]["digits"]
        tuned[r["input"]] = math.inf if d == "inf" else d
same = [k for k, d in tuned.items() if d == digits]
print(f"digits {digits!r}, kernel {run['kernel_ms']} ms; "
      + (f"the tuner's trial of units {same[0]} gave exactly these digits" if same
         else f"NO tuner trial gave exactly these digits ({sorted(tuned.values())[:5]}...)"))
PY
)"
  done
}
TUNE_OPTS=(); DIGITS=${ORBITS_DIGITS:-3,5} SPEEDUPS=10 tune orbits $orbits_args
# Cost by the figure of merit orbits prints (interactions per second, higher is better) instead
# of its kernel time: mode 2 alone, at a smaller size.
t=$(left)
if [ "$t" -gt 60 ]; then
  timeout "$t" "$mantissa" tune --out "$out/tune-orbits-fom" --digits 3 --speedup 10 --mode 2 \
    --fom 'interactions_per_s (\S+)' --trial-timeout 60 -- "$work/orbits" 16384 0.01 \
    > "$out/tune-orbits-fom.txt" 2> "$out/tune-orbits-fom.err"
  say "tune --fom orbits 16384 0.01: rc=$? $(sed -n 2p "$out/tune-orbits-fom.txt")"
fi
# The reactor's copies back are its step sizes and the measures; what it prints is its answer.
TUNE_OPTS=(--output 'energy=energy (\S+)' --output 'front=front (\S+)'); tune reactor $reactor_args
# The reactor traced (what `mantissa trace` prints, for the docs) and its trace replayed.
t=$(left); [ "$t" -gt 60 ] && t=60
[ -n "${SKIP_TRACE:-}" ] || (cd "$out" && timeout "$t" "$mantissa" trace --out trace-reactor -- "$work/reactor" $reactor_args \
  > trace-reactor.txt 2> trace-reactor.err)
if [ -z "${SKIP_TRACE:-}" ]; then
  say "trace reactor: rc=$? $(head -1 "$out/trace-reactor.txt")"
  (cd "$out" && timeout 60 "$mantissa" run trace-reactor/reactor.toml > trace-replay.txt 2>&1)
  say "replay reactor: rc=$? $(grep -c ' met ' "$out/trace-replay.txt") outputs met their exact tolerance"
fi

# diff -- APP: which sites make each run differ from itself with every cause switched.
[ -n "${SKIP_DIFF:-}" ] || for v in "reactor:$reactor_args" "orbits:8192 0.002"; do
  app=${v%%:*}; args=${v#*:}
  t=$(left); [ "$t" -le 20 ] && { say "SKIP diff $app: budget spent"; continue; }
  [ "$t" -gt 150 ] && t=150
  timeout "$t" "$mantissa" diff --runs "$work/diff-$app" -- "$work/$app" $args \
    > "$out/diff-$app.txt" 2> "$out/diff-$app.err"
  say "diff $app $args: rc=$? $(grep -m1 -E 'blamed|cause' "$out/diff-$app.txt")"
done
say "done in $(( $(date +%s) - start )) s"
