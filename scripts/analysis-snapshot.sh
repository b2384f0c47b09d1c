#!/usr/bin/env bash
# The behaviour that a refactoring must keep (issue 38), within a device budget: every shipped
# example through `run` (its output buffers as written, `none` and `all`, kept as SHA-256s);
# `shadow --json` (every analysis on the small programs, demotion error and exceptions on the
# kernels); `diff --json` (against the references, and against `strict` on two kernels); `tune
# --json` (mode 1 and the exhaustive search, which decide on digits alone). Writes
# OUT/<command>/<example>.{json,err} and OUT/run/<example>.sha256; each command's exit status and
# seconds are in OUT/status.txt. Compare two snapshots with scripts/analysis-compare.py (timings aside).
# Needs a GPU. Usage: scripts/analysis-snapshot.sh MANTISSA OUT [BUDGET_SECONDS]
set -uo pipefail
bin=${1:?mantissa binary}; out=${2:?output directory}; budget=${3:-400}
start=$(date +%s)
mkdir -p "$out"/{run,shadow,diff,tune}; : > "$out/status.txt"
left() { echo $(( budget - ($(date +%s) - start) )); }
cell() { # name command-dir args...
  local name=$1 dir=$2; shift 2
  local l; l=$(left)
  if [ "$l" -le 5 ]; then echo "$dir $name skipped (budget)" >> "$out/status.txt"; return; fi
  local t0; t0=$(date +%s)
  timeout "$l" "$bin" "$@" > "$out/$dir/$name.json" 2> "$out/$dir/$name.err"
  echo "$dir $name rc=$? $(( $(date +%s) - t0 ))s" >> "$out/status.txt"
}
kernels=$(ls examples/kernels/*/*.toml)
small="examples/shadow/shadow.toml examples/shadow/shared.toml examples/shadow/values.toml examples/tune/relax.toml examples/diff/mathfn/expsin.toml examples/diff/projector/projector.toml"
for spec in $kernels $small; do
  name=$(basename "$spec" .toml)
  cell "$name" run run "$spec" --json --repeats 0 --demote none,all --save "$out/run/$name"
  # The buffers by their hashes (the .npy files themselves are megabytes each).
  (cd "$out/run" && find "$name" -name '*.npy' | sort | xargs -r sha256sum > "$name.sha256")
  rm -rf "${out:?}/run/$name"
done
# Every analysis on the small programs; demotion error and exceptions on the kernels (their
# shadow values take minutes each).
for spec in $small; do
  cell "$(basename "$spec" .toml)" shadow shadow "$spec" --json
done
for spec in $kernels; do
  cell "$(basename "$spec" .toml)" shadow shadow "$spec" --json --analysis demotion,exceptions
done
for spec in examples/diff/mathfn/expsin.toml examples/diff/projector/projector.toml; do
  cell "$(basename "$spec" .toml)" diff diff "$spec" --json --repeats 0
done
for spec in examples/kernels/float_literal/float_literal.toml examples/kernels/gauss/gauss_f32.toml; do
  cell "$(basename "$spec" .toml)" diff diff "$spec" --json --repeats 0 --against strict
done
# Mode 1 and the exhaustive search decide on digits alone (relax: 4 FISets, 15 trials).
cell relax tune tune examples/tune/relax.toml --json --mode 1 --exhaustive --repeats 3 \
  --max-repeats 6 --out "$out/tune-out/relax"
cell gauss tune tune examples/kernels/gauss/gauss.toml --json --mode 1 --repeats 3 \
  --max-repeats 6 --out "$out/tune-out/gauss"
rm -rf "${out:?}/tune-out"
echo "snapshot done in $(( $(date +%s) - start )) s" >> "$out/status.txt"
