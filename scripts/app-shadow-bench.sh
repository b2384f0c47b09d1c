#!/usr/bin/env bash
# The shadow analysis of examples/apps/reactor in the application (`shadow -- APP`) against the
# same analysis through the spec `trace` writes of the same run (issue 39's goals: demotion
# error in the application within 1.2x of the spec's; exceptions in the application <= 2x of
# the program's own time). Each analysis alone, `--time`; the summary lines go to OUT/summary.txt.
# Needs .gpu/bin/mantissa and .gpu/bin/libmantissa_attach.so. Usage: bash scripts/app-shadow-bench.sh OUT
set -u
out=${1:?usage: bash scripts/app-shadow-bench.sh OUT}; mkdir -p "$out"; out=$(cd "$out" && pwd)
summary=$out/summary.txt; : > "$summary"
say() { echo "$*" | tee -a "$summary"; }
m=$(realpath .gpu/bin/mantissa); src=$(pwd)/examples/apps/reactor/reactor.cu
work=$(mktemp -d /tmp/app-shadow.XXXX)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
timeout 180 "$nvcc" -O3 -lineinfo -arch=sm_90 -o "$work/reactor" "$src" || { say "FAIL build"; exit 1; }
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
( cd "$work" && timeout 120 "$m" trace --out "$work/tr" -- "$work/reactor" ) > "$out/trace.out" 2>&1
say "trace rc=$?: $(grep '^wrote' "$out/trace.out")"
for a in demotion exceptions; do
  timeout 240 "$m" shadow --time --analysis "$a" "$work/tr/reactor.toml" > "$out/spec-$a.out" 2> "$out/spec-$a.err"
  say "spec $a rc=$?: $(grep -o 'time [^;]*$' "$out/spec-$a.out" | tail -1)"
  ( cd "$(dirname "$src")" && timeout 240 "$m" shadow --time --analysis "$a" --runs "$work/app-$a" -- "$work/reactor" ) > "$out/app-$a.out" 2> "$out/app-$a.err"
  say "app $a rc=$?: $(grep -o 'time [^;]*$' "$out/app-$a.out" | tail -1)"
done
tail -3 "$out"/*.err | head -40 > "$out/errors.txt"
