#!/usr/bin/env bash
# The attach library (crates/attach) on a GPU machine, issue 39: a small CUDA program built with
# nvcc twice (-cudart static, -cudart shared) that copies in, launches, copies back and prints,
# run plain, under the shim forwarding only, watched, with a replacement PTX (its own PTX with a
# constant changed by sed), with a symbol write and read; 200 launches timed plain vs watched; a
# cupy RawKernel under the shim if cupy imports. Everything goes to OUT as it runs (summary.txt,
# each run's output and events), each step under `timeout`, about 5 minutes in all.
#
# Needs .gpu/libmantissa_attach.so, built where Rust is:
#   cargo build --release -p mantissa-attach && mkdir -p .gpu && cp target/release/libmantissa_attach.so .gpu/
# Usage: bash scripts/attach-check.sh OUT
set -u
out=${1:?usage: bash scripts/attach-check.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
start=$(date +%s)
budget=${BUDGET:-280}  # seconds; the steps left when it is spent are skipped, and say so
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
check() { # check NAME CONDITION-EXIT-STATUS DETAIL
  if [ "$2" -eq 0 ]; then say "PASS $1${3:+: $3}"; else say "FAIL $1${3:+: $3}"; fi
}
elapsed() { echo $(( $(date +%s) - start )); }

shim=$(realpath .gpu/libmantissa_attach.so 2>/dev/null)
[ -f "$shim" ] || { say "FAIL no .gpu/libmantissa_attach.so (build it with cargo, see the header)"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$summary"
work=$(mktemp -d /tmp/attach-check.XXXX)
mkdir -p "$work/lib"
ln -s "$shim" "$work/lib/libcuda.so.1"

# The real driver, by absolute path (the shim's own search would find it too; this says which).
real=""
for c in $(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF}') \
         $(echo "${LD_LIBRARY_PATH:-}" | tr ':' '\n' | sed -n 's|^/.*|&/libcuda.so.1|p') \
         /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1; do
  [ -f "$c" ] && { real=$(realpath "$c"); break; }
done
[ -n "$real" ] || { say "FAIL no real libcuda.so.1 found"; exit 1; }
export MANTISSA_REAL_LIBCUDA=$real
say "real driver: $real; shim: $shim"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
say "nvcc: $($nvcc --version | tail -1)"

# The program: y = a*x*coef + y, coef a __device__ global (2.0), then the result copied back.
cat > "$work/app.cu" <<'EOF'
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
__device__ float coef = 2.0f;
__global__ void axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] * coef + y[i];
}
int main() {
    const char *r = getenv("REPS");  // launches: 1 warm, then REPS-1 timed (a = 0: y unchanged)
    int reps = r ? atoi(r) : 1;
    const int n = 1024;
    float hx[n], hy[n];
    for (int i = 0; i < n; i++) { hx[i] = 0.5f * i; hy[i] = 1.0f; }
    float *dx, *dy;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMemcpy(dx, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, hy, sizeof hy, cudaMemcpyHostToDevice);
    axpy<<<(n + 255) / 256, 256>>>(dy, dx, 0.5f, n);  // warm (module load, JIT)
    cudaDeviceSynchronize();
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0); cudaEventCreate(&t1);
    cudaEventRecord(t0);
    for (int r = 1; r < reps; r++) axpy<<<(n + 255) / 256, 256>>>(dy, dx, 0.0f, n);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms = 0; cudaEventElapsedTime(&ms, t0, t1);
    cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
    cudaError_t e = cudaGetLastError();
    double sum = 0;
    for (int i = 0; i < n; i++) sum += hy[i];
    printf("status %s\ny[1] %.6f\ny[1023] %.6f\nsum %.3f\n", cudaGetErrorString(e), hy[1], hy[1023], sum);
    fprintf(stderr, "time %d launches %.4f ms\n", reps - 1, ms);
    cudaFree(dx); cudaFree(dy);
    return e == cudaSuccess ? 0 : 1;
}
EOF
gencode="-gencode arch=compute_90,code=[sm_90,compute_90]"
for rt in static shared; do
  timeout 120 "$nvcc" $gencode -cudart $rt -o "$work/app-$rt" "$work/app.cu" > "$out/nvcc-$rt.log" 2>&1
  check "nvcc -cudart $rt" $? "$(tail -1 "$out/nvcc-$rt.log")"
done
# The program's own PTX, its constant 2.0 (0f40000000) made 3.0 (0f40400000): the replacement.
timeout 60 "$nvcc" -ptx -arch=compute_90 -o "$work/app.ptx" "$work/app.cu" > "$out/nvcc-ptx.log" 2>&1
sed 's/0f40000000/0f40400000/' "$work/app.ptx" > "$work/app-coef3.ptx"
grep -q 0f40400000 "$work/app-coef3.ptx"; check "replacement PTX made by sed (coef 2.0 -> 3.0)" $?

# run NAME BINARY [VAR=VALUE...]: the program under the shim, its output in OUT/NAME.out and .err;
# plain: the same without the shim. Each prints the exit status (124: timed out or time box).
limit() { # seconds a step may take: 60, or what is left of the budget
  local left=$(( budget - $(elapsed) ))
  [ $left -gt 60 ] && left=60
  echo $left
}
run() {
  local name=$1 bin=$2; shift 2
  mkdir -p "$out/$name"
  local t; t=$(limit)
  if [ "$t" -le 0 ]; then echo "skipped: time box" > "$out/$name.err"; : > "$out/$name.out"; echo 124; return; fi
  env LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@" \
    timeout "$t" "$bin" > "$out/$name.out" 2> "$out/$name.err"
  echo $?
}
plain() {
  local name=$1 bin=$2; shift 2
  local t; t=$(limit)
  if [ "$t" -le 0 ]; then echo "skipped: time box" > "$out/$name.err"; : > "$out/$name.out"; echo 124; return; fi
  env "$@" timeout "$t" "$bin" > "$out/$name.out" 2> "$out/$name.err"; echo $?
}

# events NAME: a one-line digest of OUT/NAME/events.jsonl (kinds, via names, misses, errors).
events() {
  python3 - "$out/$1/events.jsonl" <<'EOF'
import collections, json, sys
try:
    ev = [json.loads(l) for l in open(sys.argv[1])]
except Exception as e:
    print(f"no events ({e})"); sys.exit(0)
kinds = collections.Counter(e["event"] for e in ev)
via = collections.Counter(e.get("via") for e in ev if e["event"] in ("load", "launch", "copy"))
dirs = collections.Counter(e["dir"] for e in ev if e["event"] == "copy")
kernels = sorted({e.get("kernel") or "?" for e in ev if e["event"] == "launch"})
print("kinds", dict(kinds), "| via", dict(via), "| copies", dict(dirs), "| kernels", kernels,
      "| last", ev[-1]["event"] + ":" + ev[-1].get("how", "") if ev else "none")
for e in ev:
    if e["event"] in ("proc_miss", "error") or (e["event"] == "load" and ("error" in e or e.get("write_error"))):
        print("  ", json.dumps(e)[:300])
EOF
}
# key NAME: the module key of the first launch of axpy in OUT/NAME/events.jsonl.
key() {
  python3 -c '
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["event"] == "launch" and "axpy" in (e.get("kernel") or ""):
        print(e["module"]); break' "$out/$1/events.jsonl" 2>/dev/null
}

for rt in static shared; do
  bin=$work/app-$rt
  [ -x "$bin" ] || continue
  say "--- -cudart $rt (elapsed $(elapsed) s)"
  prc=$(plain plain-$rt "$bin"); check "$rt plain run" $prc "$(tr '\n' ' ' < "$out/plain-$rt.out")"
  # same NAME: the run's output and exit status are the plain run's.
  same() { [ "$(cat "$out/$1.rc")" = "$prc" ] && diff -q "$out/plain-$rt.out" "$out/$1.out" >/dev/null; }
  rc=$(run forward-$rt "$bin"); echo "$rc" > "$out/forward-$rt.rc"; same forward-$rt
  check "$rt forwarded only (no MANTISSA_ATTACH_DIR): same output and status" $?
  [ -z "$(ls -A "$out/forward-$rt")" ]; check "$rt forwarded only: nothing written" $?
  rc=$(run watch-$rt "$bin" MANTISSA_ATTACH_DIR="$out/watch-$rt"); echo "$rc" > "$out/watch-$rt.rc"
  same watch-$rt; check "$rt watched: same output and status" $?
  say "  events: $(events watch-$rt)"
  python3 - "$out/watch-$rt/events.jsonl" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
loads = [e for e in ev if e["event"] == "load" and e.get("module")]
launches = [e for e in ev if e["event"] == "launch" and "axpy" in (e.get("kernel") or "")]
htod = [e for e in ev if e["event"] == "copy" and e["dir"] == "htod" and e["bytes"] == 4096]
dtoh = [e for e in ev if e["event"] == "copy" and e["dir"] == "dtoh" and e["bytes"] == 4096]
ok = loads and launches and len(htod) >= 2 and dtoh and ev[-1]["event"] == "end"
ok = ok and launches[0]["grid"] == [4, 1, 1] and launches[0]["block"] == [256, 1, 1]
ok = ok and launches[0]["args"] is not None and len(launches[0]["args"]) == 4
print("loads", len(loads), "axpy launches", len(launches), "htod", len(htod), "dtoh", len(dtoh),
      "args", launches[0]["args"] if launches else None)
sys.exit(0 if ok else 1)
EOF
  check "$rt watched: a load, axpy launched (grid 4, block 256, 4 args), 2 copies in, 1 back, end" $?
  k=$(key watch-$rt)
  [ -n "$k" ] && ls "$out/watch-$rt/modules/$k".* >/dev/null 2>&1
  check "$rt the launched module saved under modules/" $? "key ${k:-none}"
  [ -n "$k" ] || continue
  # Replacement: the driver JITs our PTX (coef 3.0) instead of the module.
  rep=$work/replace-$rt; mkdir -p "$rep"; cp "$work/app-coef3.ptx" "$rep/$k.ptx"
  rc=$(run replace-$rt "$bin" MANTISSA_ATTACH_DIR="$out/replace-$rt" MANTISSA_REPLACE_DIR="$rep")
  # y[i] = 0.5 * (0.5 i) * coef + 1: y[1023] is 512.5 with coef 2, 768.25 with 3, 1024 with 4.
  grep -q '^y\[1023\] 768.250000' "$out/replace-$rt.out"
  check "$rt replaced by its PTX with coef 3.0: y[1023] 768.25 (plain 512.5)" $(( rc + $? )) "$(tr '\n' ' ' < "$out/replace-$rt.out")"
  say "  events: $(events replace-$rt)"
  grep -q '"replaced":true' "$out/replace-$rt/events.jsonl"; check "$rt load event says replaced" $?
  # Writes and reads without replacing: coef written as 4.0, read back at teardown or exit.
  rw=$work/rw-$rt; mkdir -p "$rw"
  echo '[{"symbol":"coef","hex":"00008040"}]' > "$rw/$k.writes.json"
  echo '["coef"]' > "$rw/$k.reads.json"
  rc=$(run rw-$rt "$bin" MANTISSA_ATTACH_DIR="$out/rw-$rt" MANTISSA_REPLACE_DIR="$rw")
  grep -q '^y\[1023\] 1024.000000' "$out/rw-$rt.out"
  check "$rt coef written as 4.0 before the launch: y[1023] 1024" $(( rc + $? )) "$(tr '\n' ' ' < "$out/rw-$rt.out")"
  [ "$(od -An -tx1 "$out/rw-$rt/reads/$k/coef.bin" 2>/dev/null | tr -d ' \n')" = "00008040" ]
  check "$rt coef written (4.0) and read back into reads/$k/coef.bin" $?
  say "  events: $(events rw-$rt)"
  # 200 launches timed by the program (CUDA events), plain vs watched, best of 3 each.
  best() { sort -n | head -1; }
  for i in 1 2 3; do
    plain time-plain-$rt "$bin" REPS=201 >/dev/null; awk '/^time/{print $4}' "$out/time-plain-$rt.err" >> "$work/tp-$rt"
    run time-watch-$rt "$bin" REPS=201 MANTISSA_ATTACH_DIR="$out/time-watch-$rt" >/dev/null
    awk '/^time/{print $4}' "$out/time-watch-$rt.err" >> "$work/tw-$rt"
    rm -rf "$out/time-watch-$rt"
  done
  tp=$(best < "$work/tp-$rt"); tw=$(best < "$work/tw-$rt")
  say "  200 launches ($rt): plain $tp ms, watched $tw ms, ratio $(python3 -c "print(round($tw/$tp, 3))" 2>/dev/null) (best of 3; all plain: $(tr '\n' ' ' < "$work/tp-$rt"); watched: $(tr '\n' ' ' < "$work/tw-$rt"))"
  rc=$(run timed-$rt "$bin" REPS=201 MANTISSA_ATTACH_DIR="$out/timed-$rt" MANTISSA_ATTACH_RECORD=launches,copies,time)
  grep -q '"event":"kernel_time"' "$out/timed-$rt/events.jsonl"
  check "$rt MANTISSA_ATTACH_RECORD=...,time: kernel_time events" $(( rc + $? )) "$(grep kernel_time "$out/timed-$rt/events.jsonl" | head -2 | tr '\n' ' ')"
done

say "--- cupy (elapsed $(elapsed) s)"
cat > "$work/raw.py" <<'EOF'
import cupy as cp
k = cp.RawKernel(r'''extern "C" __global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }''', 'scale')
x = cp.arange(1024, dtype=cp.float32)
k((4,), (256,), (x, cp.float32(2.0), cp.int32(1024)))
print("sum", float(x.sum()))
EOF
printf '#!/bin/sh\nexec python3 %s\n' "$work/raw.py" > "$work/raw.sh"
chmod +x "$work/raw.sh"
if timeout 60 python3 -c 'import cupy' 2>/dev/null; then
  rc=$(plain cupy-plain "$work/raw.sh")
  rc2=$(run cupy-watch "$work/raw.sh" MANTISSA_ATTACH_DIR="$out/cupy-watch")
  diff -q "$out/cupy-plain.out" "$out/cupy-watch.out" >/dev/null
  check "cupy RawKernel under the shim: same output" $(( rc + rc2 + $? )) "$(cat "$out/cupy-watch.out")"
  grep -q '"kernel":"scale"' "$out/cupy-watch/events.jsonl"; check "cupy: the scale launch recorded" $?
  say "  events: $(events cupy-watch)"
else
  say "SKIP cupy does not import"
fi
# What comes back: summary.txt and one archive of every run's output, events and files.
(cd "$out" && tar -czf "$work/runs.tgz" --exclude=./summary.txt . && find . -mindepth 1 ! -name summary.txt -delete)
mv "$work/runs.tgz" "$out/"
say "done in $(elapsed) s; $(grep -c '^PASS' "$summary") passed, $(grep -c '^FAIL' "$summary") failed"
