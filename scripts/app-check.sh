#!/usr/bin/env bash
# The example application examples/apps/reactor on a GPU machine, under the attach library
# (issue 39): built with the device's nvcc as a user would (static runtime, its f32 twin, and
# -cudart shared); run plain and watched, interleaved, to measure what watching costs; recorded
# in full on a small size (events, modules, every copy's bytes) as a fixture for the CPU tests;
# and run with its own PTX as a replacement (the driver JIT-compiles it), which must print the
# same. Results go to OUT as they come (summary.txt first), each step under `timeout`.
#
# Needs .gpu/libmantissa_attach.so (see scripts/attach-check.sh's header).
# Usage: [BUDGET=seconds] bash scripts/app-check.sh OUT
set -u
out=${1:?usage: bash scripts/app-check.sh OUT}
mkdir -p "$out"; out=$(cd "$out" && pwd)
start=$(date +%s); budget=${BUDGET:-300}
summary=$out/summary.txt; : > "$summary"
say() { echo "$*" | tee -a "$summary"; }
left() { echo $(( budget - ($(date +%s) - start) )); }
src=$(pwd)/examples/apps/reactor/reactor.cu
shim=$(realpath .gpu/libmantissa_attach.so 2>/dev/null)
[ -f "$shim" ] || { say "FAIL no .gpu/libmantissa_attach.so"; exit 1; }
work=$(mktemp -d /tmp/app-check.XXXX); mkdir -p "$work/lib"
ln -s "$shim" "$work/lib/libcuda.so.1"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
say "nvcc: $($nvcc --version | tail -1)"

for v in "reactor:" "reactor_f32:-DREAL=float" "reactor_shared:-cudart shared"; do
  name=${v%%:*}; flags=${v#*:}
  if timeout 180 "$nvcc" -O3 -arch=sm_90 $flags -o "$work/$name" "$src" > "$out/nvcc-$name.log" 2>&1
  then say "PASS build $name ($flags)"; else say "FAIL build $name: $(tail -2 "$out/nvcc-$name.log")"; fi
done

# run NAME DIR-OR-EMPTY RECORD BIN ARGS...: one run, plain when DIR is empty; prints wall ms.
run() {
  local name=$1 dir=$2 rec=$3 bin=$4; shift 4
  local t=$(left); [ "$t" -gt 60 ] && t=60
  [ "$t" -le 0 ] && { echo "skip"; return; }
  local s=$(date +%s%N)
  if [ -z "$dir" ]; then timeout "$t" "$work/$bin" "$@" > "$out/$name.out" 2> "$out/$name.err"
  else mkdir -p "$dir"; env LD_LIBRARY_PATH="$work/lib:${LD_LIBRARY_PATH:-}" MANTISSA_ATTACH_DIR="$dir" \
    MANTISSA_ATTACH_RECORD="$rec" ${REPLACE:+MANTISSA_REPLACE_DIR=$REPLACE} \
    timeout "$t" "$work/$bin" "$@" > "$out/$name.out" 2> "$out/$name.err"; fi
  local rc=$?; echo "$(( ($(date +%s%N) - s) / 1000000 )) rc=$rc"
}

for bin in reactor reactor_f32 reactor_shared; do
  [ -x "$work/$bin" ] || continue
  # What watching costs: plain and watched interleaved, 5 each, the default size; medians.
  plain=(); watched=()
  # WATCH_ARGS (say "4194304 1000") makes the run long enough for the GPU's work to dominate
  # process start and CUDA's initialisation.
  for i in 1 2 3 4 5; do
    plain+=("$(run "$bin-plain" "" "" "$bin" ${WATCH_ARGS:-} | cut -d' ' -f1)")
    rm -rf "$work/w"; watched+=("$(run "$bin-watched" "$work/w" "launches,copies" "$bin" ${WATCH_ARGS:-} | cut -d' ' -f1)")
  done
  say "$bin ${WATCH_ARGS:-} wall ms plain: ${plain[*]}; watched: ${watched[*]}"
  if cmp -s "$out/$bin-plain.out" "$out/$bin-watched.out"; then say "PASS $bin watched prints the same"
  else say "FAIL $bin watched differs: $(diff "$out/$bin-plain.out" "$out/$bin-watched.out" | head -4 | tr '\n' ' ')"; fi
  rm -rf "$work/t"; say "$bin timed: $(run "$bin-timed" "$work/t" "launches,copies,time" "$bin")"
  grep '"kernel_time"' "$work/t/events.jsonl" | tail -5 > "$out/$bin-kernel-time.jsonl"
  # The fixture: a small run recorded in full.
  fx=$out/fixture-$bin; rm -rf "$fx"
  say "$bin fixture: $(run "$bin-fixture" "$fx" "launches,copies,htod_data,dtoh_data,time" "$bin" ${FIXTURE_ARGS:-1024 5})"
  cp "$out/$bin-fixture.out" "$fx/stdout.txt"
  # Its own PTX as the replacement of every module that has PTX: the same output.
  rep=$work/rep-$bin; mkdir -p "$rep"; rm -f "$rep"/*
  for m in $(sed -n 's/.*"event":"load".*"module":"\([0-9a-f]*\)".*/\1/p' "$fx/events.jsonl" | sort -u); do
    ( cd "$work" && timeout 30 cuobjdump -xptx all "$fx/modules/$m.fatbin" > /dev/null 2>&1 )
    p=$(ls "$work"/*.ptx 2>/dev/null | head -1)
    [ -n "$p" ] && mv "$p" "$rep/$m.ptx" && rm -f "$work"/*.ptx
  done
  say "$bin replacements: $(ls "$rep" | tr '\n' ' ')"
  rm -rf "$work/r"; say "$bin replaced: $(REPLACE=$rep run "$bin-replaced" "$work/r" "launches,copies" "$bin" ${FIXTURE_ARGS:-1024 5})"
  grep '"event":"load"' "$work/r/events.jsonl" | head -3 > "$out/$bin-replaced-loads.jsonl"
  if cmp -s "$fx/stdout.txt" "$out/$bin-replaced.out" && grep -q '"replaced":true' "$work/r/events.jsonl"
  then say "PASS $bin with its PTX replaced prints the same"
  else say "FAIL $bin replaced: $(head -c 300 "$out/$bin-replaced.err") / $(diff "$fx/stdout.txt" "$out/$bin-replaced.out" | head -3 | tr '\n' ' ')"; fi
done
# trace, then run: the spec replays the application's launches and must read back, bit for bit,
# what the application read (every output is compared exactly with the application's bytes).
mantissa=$(realpath .gpu/bin/mantissa 2>/dev/null)
if [ -x "$mantissa" ]; then
  for bin in reactor reactor_f32 reactor_shared; do
    [ -x "$work/$bin" ] && [ "$(left)" -gt 40 ] || continue
    tr=$out/trace-$bin; rm -rf "$tr"
    ( cd "$work" && timeout 120 "$mantissa" trace --out "$tr" -- "$work/$bin" ${FIXTURE_ARGS:-1024 5} ) > "$out/$bin-trace.out" 2> "$out/$bin-trace.err"
    rc=$?; say "$bin trace rc=$rc: $(head -1 "$out/$bin-trace.out")"
    [ $rc -eq 0 ] || { say "FAIL $bin trace: $(tail -2 "$out/$bin-trace.err" | tr '\n' ' ')"; continue; }
    timeout 180 "$mantissa" run "$tr/$bin.toml" --repeats 3 > "$out/$bin-replay.out" 2> "$out/$bin-replay.err"
    rc=$?
    if [ $rc -eq 0 ] && ! grep -q "NOT met" "$out/$bin-replay.out"; then say "PASS $bin trace then run: every output as the application read it"
    else say "FAIL $bin replay rc=$rc: $(grep -m2 'NOT met\|error' "$out/$bin-replay.out" "$out/$bin-replay.err" | tr '\n' ' ')"; fi
  done
  # The application run as it is and with every f64 instruction demoted (and its own PTX back).
  for bin in reactor reactor_f32; do
    [ -x "$work/$bin" ] && [ "$(left)" -gt 60 ] || continue
    rm -rf "$out/run-$bin"
    timeout 200 "$mantissa" run --demote all,none --output 'energy=energy ([-+0-9.eE]+)' --output 'steps=steps ([0-9]+)' --out "$out/run-$bin" -- "$work/$bin" > "$out/$bin-inapp.out" 2> "$out/$bin-inapp.err"
    say "$bin run -- APP rc=$?:"; cat "$out/$bin-inapp.out" | tee -a "$summary"; tail -2 "$out/$bin-inapp.err" | tee -a "$summary"
    rm -rf "$out/run-$bin"/*/run/data "$out/run-$bin"/*/data
  done
  # Shadow analysis of the running application: demotion error and exceptions per source line.
  if [ -x "$work/reactor" ] && [ "$(left)" -gt 60 ]; then
    rm -rf "$out/shadow-reactor"
    ( cd "$(dirname "$src")" && timeout 240 "$mantissa" shadow --time --runs "$out/shadow-reactor" -- "$work/reactor" ) > "$out/reactor-shadow.out" 2> "$out/reactor-shadow.err"
    say "reactor shadow -- APP rc=$?:"; head -60 "$out/reactor-shadow.out" | tee -a "$summary"; tail -4 "$out/reactor-shadow.err" | tee -a "$summary"
    rm -rf "$out/shadow-reactor"/*/run/data "$out/shadow-reactor"/*/data
  fi
  # Programs the trace must follow beyond the reactor: a pitched allocation written and read with
  # cudaMemcpy2D and a __constant__ array set with cudaMemcpyToSymbol; and a program of two
  # translation units (two modules) whose names clash: a static helper and a __constant__ of
  # the same name in each.
  cat > "$work/pitched.cu" <<'CU'
#include <cstdio>
#include <vector>
__constant__ double gain[2];
__global__ void scale(double* a, size_t pitch, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) a[y * pitch + x] = a[y * pitch + x] * gain[0] + gain[1];
}
int main() {
    const int w = 100, h = 37;
    double* d; size_t pitch;
    cudaMallocPitch(&d, &pitch, w * sizeof(double), h);
    std::vector<double> host(w * h);
    for (int i = 0; i < w * h; i++) host[i] = 0.001 * i;
    cudaMemcpy2D(d, pitch, host.data(), w * sizeof(double), w * sizeof(double), h, cudaMemcpyHostToDevice);
    const double g[2] = {1.5, 0.25};
    cudaMemcpyToSymbol(gain, g, sizeof g);
    scale<<<dim3(1, h), 128>>>(d, pitch / sizeof(double), w, h);
    cudaMemcpy2D(host.data(), w * sizeof(double), d, pitch, w * sizeof(double), h, cudaMemcpyDeviceToHost);
    double s = 0; for (double v : host) s += v;
    printf("pitch %zu sum %.17g\n", pitch, s);
    return cudaDeviceSynchronize() != cudaSuccess;
}
CU
  cat > "$work/two_a.cu" <<'CU'
#include <cstdio>
__constant__ double coef = 2.0;
static __device__ __noinline__ double helper(double x) { return x * coef; }
__global__ void first(double* u, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) u[i] = helper(u[i]); }
__global__ void second(double* u, int n);
int main() {
    const int n = 1000; double* u; cudaMalloc(&u, n * sizeof(double));
    double h[n]; for (int i = 0; i < n; i++) h[i] = i;
    cudaMemcpy(u, h, sizeof h, cudaMemcpyHostToDevice);
    first<<<4, 256>>>(u, n); second<<<4, 256>>>(u, n); first<<<4, 256>>>(u, n);
    cudaMemcpy(h, u, sizeof h, cudaMemcpyDeviceToHost);
    double s = 0; for (double v : h) s += v; printf("sum %.17g\n", s);
    return 0;
}
CU
  cat > "$work/two_b.cu" <<'CU'
__constant__ double coef = 0.5;
static __device__ __noinline__ double helper(double x) { return x + coef; }
__global__ void second(double* u, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) u[i] = helper(u[i]); }
CU
  ( cd "$work" && timeout 120 "$nvcc" -O3 -arch=sm_90 -o pitched pitched.cu && timeout 120 "$nvcc" -O3 -arch=sm_90 -c two_a.cu two_b.cu && timeout 60 "$nvcc" -arch=sm_90 -o two two_a.o two_b.o ) > "$out/nvcc-more.log" 2>&1 || say "FAIL build pitched/two: $(tail -3 "$out/nvcc-more.log" | tr '\n' ' ')"
  for bin in pitched two; do
    [ -x "$work/$bin" ] && [ "$(left)" -gt 30 ] || continue
    tr=$out/trace-$bin; rm -rf "$tr"
    ( cd "$work" && timeout 60 "$mantissa" trace --out "$tr" -- "$work/$bin" ) > "$out/$bin-trace.out" 2> "$out/$bin-trace.err"
    rc=$?; say "$bin trace rc=$rc: $(head -1 "$out/$bin-trace.out") $(tail -1 "$out/$bin-trace.err")"
    grep '^note' "$out/$bin-trace.out" | head -5 | tee -a "$summary"
    [ $rc -eq 0 ] || continue
    timeout 120 "$mantissa" run "$tr/$bin.toml" --repeats 3 > "$out/$bin-replay.out" 2> "$out/$bin-replay.err"
    rc=$?
    if [ $rc -eq 0 ] && ! grep -q "NOT met" "$out/$bin-replay.out"; then say "PASS $bin trace then run: every output as the application read it ($(grep -c ' met ' "$out/$bin-replay.out") rows met)"
    else say "FAIL $bin replay rc=$rc: $(grep -m2 'NOT met\|error' "$out/$bin-replay.out" "$out/$bin-replay.err" | tr '\n' ' ')"; fi
  done
  # A Python program: cupy's kernels compiled to PTX (cupy compiles to cubin by default).
  if python3 -c 'import cupy' 2>/dev/null && [ "$(left)" -gt 40 ]; then
    cat > "$work/decay.py" <<'PY'
import cupy as cp
k = cp.RawKernel(r"""
extern "C" __global__ void decay(double* u, double rate, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) u[i] = u[i] - rate * u[i] * u[i];
}""", "decay")
n = 4096
u = cp.asarray([1.0 / (1 + i) for i in range(n)])
steps = 0
while float(u.sum()) > 2.0 and steps < 1000:
    k(((n + 255) // 256,), (256,), (u, cp.float64(0.05), cp.int32(n)))
    steps += 1
print("steps", steps, "sum", repr(float(u.sum())))
PY
    for mode in cubin ptx; do
      tr=$out/trace-cupy-$mode; rm -rf "$tr"
      ( cd "$work" && { [ $mode = ptx ] && export CUPY_COMPILE_WITH_PTX=1; true; } && timeout 120 "$mantissa" trace --out "$tr" -- python3 "$work/decay.py" ) > "$out/cupy-$mode-trace.out" 2> "$out/cupy-$mode-trace.err"
      say "cupy ($mode) trace rc=$?: $(head -3 "$out/cupy-$mode-trace.out" | tr '\n' ' ') $(tail -1 "$out/cupy-$mode-trace.err")"
      python3 - "$tr/run/events.jsonl" <<'PY' | tee -a "$summary"
import json, sys, collections
ev = [json.loads(l) for l in open(sys.argv[1])]
loads = [e for e in ev if e["event"] == "load"]
launches = collections.Counter((e.get("module"), e.get("kernel")) for e in ev if e["event"] == "launch")
print("  loads:", [(e.get("module"), e.get("kind"), e.get("via")) for e in loads][:12])
print("  launches:", launches.most_common(8))
PY
      for f in "$tr"/run/modules/*; do echo "  $(basename "$f"): $(cuobjdump -lptx -lelf "$f" 2>&1 | tr '\n' ' ' | cut -c1-200)"; done | head -12 | tee -a "$summary"
    done
    rm -rf "$work/cupyrun"
    timeout 120 "$mantissa" run --demote all --out "$work/cupyrun" -- python3 "$work/decay.py" > "$out/cupy-inapp.out" 2> "$out/cupy-inapp.err"
    say "cupy run -- APP rc=$?:"; cat "$out/cupy-inapp.out" | head -30 | tee -a "$summary"; tail -2 "$out/cupy-inapp.err" | tee -a "$summary"
  fi
else
  say "no .gpu/bin/mantissa: trace not checked"
fi
cp "$work"/reactor "$work"/reactor_f32 "$work"/reactor_shared "$out/" 2>/dev/null
say "done in $(( $(date +%s) - start )) s"
