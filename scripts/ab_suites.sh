#!/usr/bin/env bash
# Device A/B of knob settings over whole bench_gemm suites on one build: one process per
# (round, setting), settings alternating; then, per setting, the geomean over cases of our
# median time relative to the first setting, and of ours/torch.mm.
# Usage: AB_SETTINGS="- VAR=value[,VAR=value]" [AB_SUITES=large] [AB_ROUNDS=3] bash scripts/ab_suites.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tk_abs}
mkdir -p "$OUT"
for r in $(seq "${AB_ROUNDS:-3}"); do
  for v in ${AB_SETTINGS:?AB_SETTINGS: space list of VAR=value settings, - for none}; do
    e=(); [ "$v" != - ] && e=(${v//,/ })
    env "${e[@]}" timeout 200 python3 benchmarks/bench_gemm.py --suite "${AB_SUITES:-large}" --rounds 1 --rep-ms 40 \
      --out "$OUT/abs_${v//[^A-Za-z0-9_]/_}_$r.json" > /dev/null 2>&1 || echo "r$r $v: rc=$?"
  done
done
python3 - "$OUT" ${AB_SETTINGS} <<'PY'
import glob, json, math, re, statistics, sys
out, settings = sys.argv[1], sys.argv[2:]
ms, ratio = {}, {}
for v in settings:
    for f in glob.glob(f"{out}/abs_{re.sub(r'[^A-Za-z0-9_]', '_', v)}_*.json"):
        for c in json.load(open(f))["results"]:
            if "ours_ms" not in c:
                continue
            key = (c["suite"], f"{c['M']}x{c['N']}x{c['K']}", c["layout"])
            ms.setdefault(key, {}).setdefault(v, []).append(c["ours_ms"])
            ratio.setdefault(key, {}).setdefault(v, []).append(c["ratio_ours_over_torch"])
base = settings[0]
for v in settings:
    keys = [k for k in ms if v in ms[k] and base in ms[k]]
    rel = [statistics.median(ms[k][v]) / statistics.median(ms[k][base]) for k in keys]
    rat = [statistics.median(ratio[k][v]) for k in keys]
    g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
    print(f"{v}: {len(keys)} cases, time vs {base} geomean {g(rel):.4f} (min {min(rel):.3f}, max {max(rel):.3f}); "
          f"ours/torch geomean {g(rat):.4f}, worst {min(rat):.3f}")
for k in sorted(ms):
    print(" ".join(k), " | ".join(f"{v}: {statistics.median(ms[k][v]):.4f}" for v in settings if v in ms[k]))
PY
