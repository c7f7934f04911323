#!/usr/bin/env bash
# The whole GPU check, one command on an H100/H200 (what every session and reviewer runs):
#   build -> SASS/ptxas facts -> GPU tests -> compute-sanitizer -> benchmark -> demo -> summary.
# Usage: bash scripts/gpu_check.sh [quick|nobench|sanitize|perf|tests]
#   tests: the GPU tests alone (no sanitizer, benchmark or demo);
#   quick: skip the benchmark, tests stop at the first failure; nobench: skip the benchmark only;
#   perf: build, tests (stop at the first failure), benchmark; no sanitizer, no demo;
#   sanitize: build + compute-sanitizer only, with racecheck over every kernel config (slow: it
#   needs most of a 10-minute device call on its own).
# Logs go to $OUT (the device tool's output folder, which brings back at most 8 files: each mode but
# the full check, which no single call fits, writes fewer) or /tmp/tk_gpu_check.
# TK_BENCH_SUITE picks the benchmark suites (default all: large, unaligned, skinny); TK_PREBUILT=NAME
# takes .devso/NAME.so (scripts/build_device_so.sh, built off the device) instead of building;
# The tests run as three concurrent pytest processes on the one GPU (TK_TEST_PART=par, the default;
# most tests are host-bound): the whole suite (~3420 tests) took 322 s on an H100 that way (2026-12-05h,
# `tests` mode: part 1 196 s, part 2 126 s, part 3 184 s, skinny variants 7 s) against ~15 min in one
# process (TK_TEST_PART=all). TK_TEST_PART=1|2|3 runs one part and nothing else of the check (the
# sanitizer is then the `sanitize` mode's call). 1: the files not in 2 or 3 (fuzz, compile / train
# through Inductor, pairs, the CPU files) and the demo; 2: test_gpu.py and test_gpu_widths.py; 3: the
# plan, runtime, train, model, skinny (with its knob variants) and stream-K files.
# A full check (tests + sanitizers + benchmark) is more than one 10-min device call: run `tests`,
# `sanitize` and `perf` as separate calls.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tk_gpu_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
MODE=${1:-full}
if ls .whl/*.whl >/dev/null 2>&1; then  # carried wheels (expecttest is not installed there)
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl && export PYTHONPATH=/tmp/tk_site
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader

t0=$(date +%s)
if [ -n "${TK_PREBUILT:-}" ]; then
  # TK_PREBUILT=NAME: the library scripts/build_device_so.sh made off the device (.devso carried), no build here
  bash scripts/use_device_so.sh "$TK_PREBUILT" || exit 1
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
  cp ".devso/$TK_PREBUILT.build.log" "$OUT/build.log"
  echo "build: prebuilt .devso/$TK_PREBUILT.so"
elif ! MAX_JOBS=16 python3 -m pip install -v --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; then
  tail -n 60 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
else
  echo "build: $(( $(date +%s) - t0 )) s"
fi

so=$(ls torch_tk/_C*.so | head -n 1)
CUOBJ=$(command -v cuobjdump || echo "$(python3 -c 'import triton,os;print(os.path.dirname(triton.__file__))')/backends/nvidia/bin/cuobjdump")
# The SASS facts in the background, beside the tests (CPU only: the dump and both scans took ~3.5 min
# of a cold H200 call before the tests began, 2026-12-05i); joined before the summary.
( "$CUOBJ" --dump-sass "$so" > /tmp/tk_sass.txt 2>&1
  echo "SASS: $(grep -c "Function : .*gemm_kernel" /tmp/tk_sass.txt) gemm kernels, $(grep -c HGMMA /tmp/tk_sass.txt) HGMMA instructions;" \
    "$(python3 scripts/sass_hazards.py /tmp/tk_sass.txt | tail -n 1);" \
    "$(python3 scripts/sass_divergent_wait.py /tmp/tk_sass.txt | tail -n 1)"  # accumulators before the wait; divergent waits
) > /tmp/tk_sass_summary.txt 2>&1 & sass_pid=$!
ptxas=$(grep -A3 "Compiling entry function '.*gemm_kernel.*13__nv_bfloat16S3_Lb0ELb1" "$OUT/build.log" | grep -E "registers|spill" | tr -s ' ' | paste -sd ' ')

xflag=""; { [ "$MODE" = quick ] || [ "$MODE" = perf ]; } && xflag="-x"
export TK_FUZZ_REPORT="$OUT/fuzz.txt"  # test_fuzz.py writes its per-category worst errors here
tests_rc=0; tests="(not run in $MODE mode)"
if [ "$MODE" != sanitize ]; then
  part2=(test/test_gpu.py test/test_gpu_widths.py)
  part3=(test/test_gpu_plans.py test/test_gpu_runtime.py test/test_gpu_train.py test/test_models_gpu.py
         test/test_skinny_gpu.py test/test_stream_k_gpu.py test/test_distributed_gpu.py)
  part1=(test); for f in "${part2[@]}" "${part3[@]}"; do part1+=(--ignore="$f"); done
  PART=${TK_TEST_PART:-par}
  case "$PART" in
    1) targets=("${part1[@]}") ;;
    2) targets=("${part2[@]}") ;;
    3) targets=("${part3[@]}") ;;
    *) targets=(test) ;;
  esac
  if [ "$PART" = par ]; then
    # the three parts as three concurrent processes on the one GPU (most tests are host-bound:
    # Python, references, child processes), each part's log appended to pytest.log in order
    # Each part is boxed (TK_TEST_BOX s, default 480): on a slow machine (a cold H200, 2026-12-05i:
    # parts 2 / 3 took 251 / 359 s, part 1 was past 575 s) SIGINT makes pytest stop and still print
    # what ran, the test it was in and the slowest tests, so a 10-min call ends with a summary.
    box=${TK_TEST_BOX:-480}; rm -f /tmp/tk_test_now_p*
    run_part() {  # run_part I FILES...: part I boxed, its log in $OUT/pytest_pI.log
      local i=$1; shift
      TK_TEST_CURRENT=/tmp/tk_test_now_p$i timeout -s INT -k 30 "$box" python3 -m pytest "$@" -q -ra --durations=12 $xflag > "$OUT/pytest_p$i.log" 2>&1
    }
    run_part 1 "${part1[@]}" & pids=($!)
    run_part 2 "${part2[@]}" & pids+=($!)
    run_part 3 "${part3[@]}" & pids+=($!)
    tests=""
    for i in 1 2 3; do
      wait "${pids[i-1]}"; rc=$?  # 124: boxed
      box_note=""; [ $rc = 124 ] && box_note=" (BOXED at ${box} s: not finished, in $(cat /tmp/tk_test_now_p$i 2>/dev/null))"
      [ $rc != 0 ] && tests_rc=1
      { echo "=== part $i"; cat "$OUT/pytest_p$i.log"; } >> "$OUT/pytest.log"
      tests="$tests${tests:+; }part $i: $(tail -n 1 "$OUT/pytest_p$i.log")$box_note"; rm -f "$OUT/pytest_p$i.log"
    done
  else
    python3 -m pytest "${targets[@]}" -q -ra $xflag > "$OUT/pytest.log" 2>&1
    tests_rc=$?
    tests=$(tail -n 1 "$OUT/pytest.log")
  fi
  # The skinny kernel's other 9..16-token CTA shapes run only under the knob (skinny_plan.h:
  # by default only 32 rows x 16 warps): 16 rows x 8 warps, 32 rows x 8 warps.
  for rows in 16 32; do
    case "$PART" in 3|par|all) ;; *) break ;; esac  # part 3's (test_skinny_gpu.py is in it)
    TK_HOPPER_SKINNY_ROWS16=$rows python3 -m pytest test/test_skinny_gpu.py -q $xflag >> "$OUT/pytest.log" 2>&1 || tests_rc=1
    tests="$tests; skinny tests, ROWS16=$rows: $(tail -n 1 "$OUT/pytest.log")"
  done
fi

san=""
# Time-boxed: under racecheck a spinning mbarrier wait can starve (seen once: no progress in 7 min).
# The carried MiniLM weights (scripts/prepare_minilm.py -> .minilm) are found by test_models_gpu.py.
# a part: its tests only (part 1 adds the demo, below); the sanitize mode keeps its sanitizer
case "${TK_TEST_PART:-}" in 1|2|3) [ "$MODE" != sanitize ] && MODE=tests ;; esac
# TK_SAN_TOOLS picks the tools (the sanitize mode's whole set is more than one 10-min call: racecheck
# alone takes up to 420 s; e.g. TK_SAN_TOOLS="synccheck memcheck" for a second call).
tools=${TK_SAN_TOOLS:-memcheck racecheck synccheck}; { [ "$MODE" = perf ] || [ "$MODE" = tests ]; } && tools=""
for tool in $tools; do
  # racecheck instruments every shared-memory access and mbarrier spin: 16 kernel configs on one
  # shape took more than 90 s on an H200 (2026-11-22); the full run is the `sanitize` mode's job.
  args=""; [ $tool != memcheck ] && args="--small"
  limit=300; [ $tool != memcheck ] && limit=90
  [ "$MODE" = sanitize ] && limit=420 && [ $tool = synccheck ] && limit=150  # (--small: ~1-2 min)
  timeout $limit compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_case.py $args >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san $tool=rc$rc"
done
# racecheck where the dynamic schedule's slot hand-off showed WAR hazards (every lane read the slot
# before the leader's arrival freed it; now the leader alone reads it): 1000x1001x999, whose
# fp32-out addmm runs the swapped 128x128 kernel (H100 2026-12-06c: 20 errors before, 0 after; ~95 s).
if [ "$MODE" = sanitize ] && [[ " $tools " == *" racecheck "* ]]; then
  timeout 200 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 python3 scripts/sanitize_case.py \
    --shapes=1000x1001x999 >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san racecheck(1000x1001x999)=rc$rc"
fi
# The SwiGLU GEMM (tk.linear_swiglu: two weight maps, h rounds, held rounds), each tool of the mode.
for tool in $tools; do
  [ "$MODE" = sanitize ] || [ $tool = memcheck ] || continue
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_swiglu.py >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san $tool(swiglu)=rc$rc"
done
if [ "$MODE" != perf ] && [ "$MODE" != tests ]; then
  # stream-K mode 1's cross-CTA partials and flags, and the one-warpgroup 128x128 kernels on
  # split-K plans (20x200x1000 fp32 out: 4 splits) and with their staging boxes in the stage ring
  # (330x4000x136)
  TK_HOPPER_STREAMK=1 TK_HOPPER_ONE_WG=13 TK_HOPPER_RING_STAGING=1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_case.py --small >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san memcheck(stream-K,one_wg=13,ring_staging)=rc$rc"
  # the opt-in epilogue variants: stmatrix staging, every round stored at once (TK_HOPPER_STORE)
  for v in stmatrix tma; do
    TK_HOPPER_STORE=$v timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_case.py --small >> "$OUT/sanitizer.log" 2>&1
    rc=$?; [ $rc = 124 ] && rc="timeout"
    san="$san memcheck($v)=rc$rc"
  done
  # 128x144 tiles forced wherever valid (several units per CTA, tails, odd pitches)
  TK_HOPPER_TILE=0:128:144:1:1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_case.py --small >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san memcheck(tile=128x144)=rc$rc"
  # 128x224 tiles forced wherever valid (4 epilogue rounds, the last 32 columns; tails, odd pitches)
  TK_HOPPER_TILE=0:128:224:1:1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_case.py --small >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san memcheck(tile=128x224)=rc$rc"
  # swapped 128x72 tiles forced wherever valid (plan_rules.h kTokenWidths: a last round of 8 columns; tails)
  TK_HOPPER_TILE=1:128:72:1:1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_case.py --small >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san memcheck(tile=swapped 128x72)=rc$rc"
  # the token-width tiles on two consumer warpgroups (plan.h one_wg bit 4 off; 300x4000x136 runs one by default)
  TK_HOPPER_ONE_WG=1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_case.py --small >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san memcheck(one_wg=1)=rc$rc"
  # 2-CTA clusters multicasting B with a 16-row-tile band on every 128x256 plan of a wave or more
  # (by default only long-running plans, too big for memcheck: plan_rules.h kLongRunWork)
  TK_HOPPER_CLUSTER=2 TK_HOPPER_GROUP_M=16 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_case.py --small >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san memcheck(cluster=2,group_m=16)=rc$rc"
  # the non-default kernels: full boxes zero-filled past M / N instead of the tail boxes, the
  # skinny kernel's 32-row 8-warp CTAs, two consumer warpgroups on every 128x128 tile, 256-wide
  # tiles where the default takes 192 (160x20000x520)
  TK_HOPPER_TAIL_BOX=0 TK_HOPPER_SKINNY_ROWS16=32 TK_HOPPER_ONE_WG=0 TK_HOPPER_BN192=0 timeout 300 compute-sanitizer --tool memcheck \
    --error-exitcode 9 python3 scripts/sanitize_case.py --small >> "$OUT/sanitizer.log" 2>&1
  rc=$?; [ $rc = 124 ] && rc="timeout"
  san="$san memcheck(tail_box=0,skinny32x8,wg64,bn256)=rc$rc"
fi

if [ "$MODE" = full ] || [ "$MODE" = perf ]; then
  python3 benchmarks/bench_gemm.py --suite "${TK_BENCH_SUITE:-all,tails}" --out "$OUT/bench.json" --md "$OUT/bench.md" \
    > "$OUT/bench.log" 2>&1 || echo "bench rc=$?"
  # The skinny suite again with the L2 flushed clean before each call (bench_gemm.py --l2): the
  # default memset flush leaves dirty lines that slow cuBLAS's weight streaming more than ours.
  python3 benchmarks/bench_gemm.py --suite skinny --l2 clean > "$OUT/bench_clean.log" 2>&1 || echo "bench clean rc=$?"
  # The large suite again at 6 rounds of 120 ms (~80 s on an H100): at the power cap each side's rounds
  # move +-3-4%, so 2-3 rounds leave one case per run at 0.94-0.95 (H100 2026-12-06: 0.973..1.038 at 6).
  python3 benchmarks/bench_gemm.py --suite large --rounds 6 --rep-ms 120 > "$OUT/bench_large6.log" 2>&1 ||
    echo "bench large6 rc=$?"
fi
demo_rc=0
{ [ "$MODE" = full ] || [ "$MODE" = quick ] || [ "$MODE" = nobench ] || { [ "$MODE" = tests ] && [ "${TK_TEST_PART:-}" = 1 ]; }; } &&
  { python3 -m torch_tk.demo > "$OUT/demo.log" 2>&1; demo_rc=$?; }

wait "$sass_pid"
echo "================ torch_tk GPU check ================"
cat /tmp/tk_sass_summary.txt
echo "ptxas (bf16 NN kernel): $ptxas"
echo "tests (rc=$tests_rc): $tests"
grep -E "FAILED|ERROR" "$OUT/pytest.log" | head -n 20
echo "sanitizer:$san"; [ -f "$OUT/sanitizer.log" ] && grep -E "ERROR SUMMARY|RACECHECK SUMMARY|mismatches" "$OUT/sanitizer.log" | head -n 6
[ -f "$OUT/fuzz.txt" ] && { echo "--- fuzz"; tail -n 30 "$OUT/fuzz.txt"; }
[ -f "$OUT/demo.log" ] && { echo "--- demo (rc=$demo_rc)"; tail -n 8 "$OUT/demo.log"; }
[ -f "$OUT/bench.log" ] && { echo "--- bench"; tail -n 70 "$OUT/bench.log"; }
[ -f "$OUT/bench_clean.log" ] && { echo "--- skinny, L2 flushed clean"; tail -n 1 "$OUT/bench_clean.log"; }
[ -f "$OUT/bench_large6.log" ] && { echo "--- large, 6 rounds of 120 ms"; tail -n 1 "$OUT/bench_large6.log"; }
exit $tests_rc
