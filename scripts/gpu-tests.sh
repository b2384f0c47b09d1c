#!/usr/bin/env bash
# Runs staged test binaries on the GPU machine (from the repo root, after staging into .gpu/ as
# ../shared/tools/stage-gpu.sh does: .gpu/tests/<binary>, .gpu/tests.list of "<binary> <crate dir>"),
# GPU-relevant ones first, the CPU-heavy ones last, each under `timeout` within BUDGET seconds in
# all, with MANTISSA_REQUIRE_GPU=1 (GPU tests fail rather than skip). Writes OUT/summary.txt, the
# failing lines to OUT/failures.txt and up to five failing binaries' whole logs.
# Usage: [BUDGET=520] [CAP=seconds per binary] [SLOW=regex] [OUT=dir] bash scripts/gpu-tests.sh
set -u
export MANTISSA_REQUIRE_GPU=1 RUST_BACKTRACE=1
out=${OUT:-/tmp/o}; mkdir -p "$out"
root=$(pwd); start=$(date +%s); budget=${BUDGET:-520}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# CPU-only heavy binaries last (they need no GPU).
skip='^(sass_contraction|pin_contraction|interp_examples|dw_bounds|exact|reference_elementary|reference_special|search)-'
# GPU binaries known to take minutes (SLOW, a regex) run after the other GPU ones.
slow=${SLOW:-'^(gpu_shadow|gpu_values|gpu_mathlib|gpu_sources)-'}
{ grep -Ev "$skip" .gpu/tests.list | grep -Ev "$slow"; grep -Ev "$skip" .gpu/tests.list | grep -E "$slow"
  grep -E "$skip" .gpu/tests.list; } > /tmp/order.list
failed=0
: > "$out/summary.txt"
while read -r name dir; do
  left=$(( budget - ($(date +%s) - start) ))
  if [ $left -le 5 ]; then echo "budget spent before $name" | tee -a "$out/summary.txt"; continue; fi
  cap=${CAP:-$left}; [ "$cap" -gt "$left" ] && cap=$left
  (cd "$root/$dir" 2>/dev/null || cd "$root"; timeout $cap "$root/.gpu/tests/$name") > /tmp/log-$name 2>&1
  rc=$?
  s=$(grep -E '^test result:' /tmp/log-$name | tail -1)
  line="$([ $rc -eq 0 ] && echo ok || echo FAILED) $name ($dir): ${s:-no summary, rc=$rc}"
  echo "$line" | tee -a "$out/summary.txt"
  if [ $rc -ne 0 ]; then failed=$((failed+1)); grep -E 'panicked|FAILED|failed|error' /tmp/log-$name | head -15 | tee -a "$out/failures.txt"; [ $failed -le 5 ] && cp /tmp/log-$name "$out/" 2>/dev/null; fi
done < /tmp/order.list
echo "failed binaries: $failed; elapsed $(( $(date +%s) - start )) s"
