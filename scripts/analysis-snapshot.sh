#!/usr/bin/env bash
# The behaviour that a refactoring must keep (issue 38): every shipped example through `run`
# (output buffers saved as .npy, as written and demoted: kept as their SHA-256), `shadow --json` (all analyses),
# `diff --json` (against the spec's references, or against `strict` where it has none) and
# `tune --json` (mode 1, and the exhaustive search on the small relax, which decide on digits
# alone). Writes
# OUT/<command>/<example>.{json,err} and OUT/run/<example>.sha256; each command's exit status is
# in OUT/status.txt. Compare two snapshots with scripts/analysis-compare.py (timings aside).
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
  timeout "$l" "$bin" "$@" > "$out/$dir/$name.json" 2> "$out/$dir/$name.err"
  echo "$dir $name rc=$?" >> "$out/status.txt"
}
specs=$(ls examples/kernels/*/*.toml examples/shadow/*.toml examples/tune/*.toml examples/diff/*/*.toml)
for spec in $specs; do
  name=$(basename "$spec" .toml)
  cell "$name" run run "$spec" --json --repeats 0 --demote none,all --save "$out/run/$name"
  # The buffers by their hashes (the .npy files themselves are megabytes each).
  (cd "$out/run" && find "$name" -name '*.npy' | sort | xargs -r sha256sum > "$name.sha256")
  rm -rf "${out:?}/run/$name"
done
for spec in $specs; do
  name=$(basename "$spec" .toml)
  cell "$name" shadow shadow "$spec" --json
done
for spec in $specs; do
  name=$(basename "$spec" .toml)
  if grep -q '^\s*reference\s*=' "$spec"; then
    cell "$name" diff diff "$spec" --json --repeats 0
  else
    cell "$name" diff diff "$spec" --json --repeats 0 --against strict
  fi
done
for spec in examples/tune/relax.toml examples/kernels/*/*.toml; do
  name=$(basename "$spec" .toml)
  grep -q '_f32$' <<< "$name" && continue
  # The exhaustive search only where it is small (relax: 4 FISets, 15 trials).
  extra=(); [ "$name" = relax ] && extra=(--exhaustive)
  cell "$name" tune tune "$spec" --json --mode 1 "${extra[@]}" --repeats 3 --max-repeats 6 \
    --out "$out/tune-out/$name"
done
echo "snapshot done in $(( $(date +%s) - start )) s" >> "$out/status.txt"
