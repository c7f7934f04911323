#!/usr/bin/env bash
# Device A/B of environment-knob settings on bench_model (sustained defaults: both models at the power
# cap, 2026-12-05c): one bench_model process per (round, setting), settings alternating, nvidia-smi's
# clock-event mask sampled beside each (benchmarks/clock_reasons.py). Prints per run the two step
# times and the ratio, the reasons table, then the mean ratio and patched step time per setting.
# Usage (after use_device_so.sh or a build in the same call):
#   AB_SETTINGS="- TK_HOPPER_GROUP_M=16" [AB_ROUNDS=3] [AB_ARGS="--profile"] bash scripts/ab_model.sh
# With --profile the summary adds, per setting, the profiled GEMM ratio (bench_model.ceiling) and the
# attention / Inductor kernels' tk / stock time, raw and at equal SM clocks.
# A setting is one space-free word VAR=value[,VAR=value...] ("-" for none), as in ab_knob.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tk_abm}
mkdir -p "$OUT"
field=clocks_event_reasons.active  # older drivers call it clocks_throttle_reasons
nvidia-smi --query-gpu=$field --format=csv,noheader -c 1 >/dev/null 2>&1 || field=clocks_throttle_reasons.active
for r in $(seq "${AB_ROUNDS:-3}"); do
  for v in ${AB_SETTINGS:?AB_SETTINGS: space list of VAR=value or -}; do
    e=(); [ "$v" != - ] && e=(${v//,/ })
    tag="${v//[^A-Za-z0-9_]/_}_$r"
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,$field --format=csv,noheader,nounits -lms 20 \
      > "$OUT/smi_$tag.csv" 2>/dev/null & smi=$!
    env "${e[@]}" timeout 150 python3 benchmarks/bench_model.py ${AB_ARGS:-} --out "$OUT/bm_$tag.json" \
      > "$OUT/bm_$tag.txt" 2>&1
    kill $smi 2>/dev/null; wait $smi 2>/dev/null
    echo "r$r $v: $(grep -E '^(stock|tk) ' "$OUT/bm_$tag.txt" | awk '{printf "%s %s ms | ", $1, $2}')$(grep ratio "$OUT/bm_$tag.txt")"
    python3 benchmarks/clock_reasons.py "$OUT/smi_$tag.csv" "$OUT/bm_$tag.json" 2>/dev/null | cut -c1-64
  done
done
echo "== per setting: mean ratio tk/stock, mean patched and stock step ms"
python3 - "$OUT" ${AB_SETTINGS} <<'PY'
import glob, json, re, sys
out = sys.argv[1]
for v in sys.argv[2:]:
    tag = re.sub(r"[^A-Za-z0-9_]", "_", v)
    # bm_<tag>_<round>.json exactly: a longer setting's tag may start with this one's.
    files = [f for f in sorted(glob.glob(f"{out}/bm_{tag}_*.json")) if re.fullmatch(rf"bm_{tag}_\d+\.json", f.split("/")[-1])]
    runs = [json.load(open(f)) for f in files]
    if not runs:
        print(f"{v}: no runs")
        continue
    ratios = [r["ratio_tk_over_stock"] for r in runs]
    tk = [r["step_ms_median"]["tk"] for r in runs]
    stock = [r["step_ms_median"]["stock"] for r in runs]
    each = " ".join(f"{x:.3f}" for x in ratios)
    print(f"{v}: ratio {sum(ratios) / len(ratios):.3f} over {len(runs)} ({each}); "
          f"tk {sum(tk) / len(tk):.2f} ms, stock {sum(stock) / len(stock):.2f} ms")
    prof = [r for r in runs if "ceiling" in r]  # AB_ARGS=--profile: bench_model.ceiling and per-class times
    if prof:
        g = [r["ceiling"]["gemm_ratio"] for r in prof]
        line = f"    profiled: GEMMs torch / ours {sum(g) / len(g):.3f}"
        for c in ("attention", "triton (inductor)"):
            q = []
            for r in prof:
                s, t = (r["profile_us"][m]["classes"][c] for m in ("stock", "tk"))
                mhz = {m: (r.get("profile_clocks") or {}).get(m, {}).get("sm_mhz") for m in ("stock", "tk")}
                if s and t and all(mhz.values()):
                    q.append((t / s, t / s * mhz["tk"] / mhz["stock"]))
            if q:
                line += (f"; {c} tk / stock {sum(a for a, _ in q) / len(q):.3f}"
                         f" ({sum(b for _, b in q) / len(q):.3f} at equal clocks)")
        print(line)
PY
