#!/usr/bin/env bash
# Device A/B of libraries built off the device (scripts/build_device_so.sh) and environment settings:
# one bench_gemm process per (round, variant), variants alternating. A variant is LIB:SETTING, LIB a
# .devso name, SETTING as in scripts/ab_knob.sh (VAR=value[,VAR=value...] or "-"). The libraries
# were built from different sources (that is the point), so the source-hash check of
# use_device_so.sh is skipped; each must still match this machine's torch.
# Usage: AB_SHAPES=MxNxK,... AB_VARIANTS="d19:- d20:- d20:TK_X=1" [AB_ROUNDS=2] [AB_LAYOUTS=NT] bash scripts/ab_devso.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tk_abd}
mkdir -p "$OUT"
have=$(python3 -c 'import torch; print(torch.version.git_version)')
so=torch_tk/_C$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
for v in ${AB_VARIANTS:?AB_VARIANTS: space list of LIB:SETTING}; do
  lib=${v%%:*}
  [ "$(cat ".devso/$lib.torch")" = "$have" ] || { echo "ab_devso: $lib was built against another torch"; exit 1; }
  gzip -dc ".devso/$lib.so.gz" > "/tmp/tk_lib_$lib.so"  # always: a warm machine may hold an older build of that name
  # A library older than this tree's Python may lack an op that torch_tk/ops.py registers (2026-12-05c:
  # d25 / d27 predated tk.gemm_pair): stop here rather than time nothing.
  cp "/tmp/tk_lib_$lib.so" "$so"
  python3 -c "import torch_tk" 2>/dev/null || { echo "ab_devso: $lib does not load with this tree's torch_tk (built from older sources?): rebuild it"; exit 1; }
done
for r in $(seq "${AB_ROUNDS:-2}"); do
  for v in $AB_VARIANTS; do
    lib=${v%%:*}; set_=${v#*:}; e=(); [ "$set_" != - ] && e=(${set_//,/ })
    cp "/tmp/tk_lib_$lib.so" "$so"
    log="$OUT/ab_${v//[^A-Za-z0-9_]/_}_$r.log"
    env "${e[@]}" timeout 150 python3 benchmarks/bench_gemm.py --shapes "${AB_SHAPES:?AB_SHAPES}" \
      --layouts "${AB_LAYOUTS:-NT}" --rounds 2 --rep-ms 40 > "$log" 2>&1
    echo "r$r $v: $(grep -E "^custom " "$log" | awk '{printf "%s ", $8}')"
  done
done
echo "== per shape: ms of ours (median over rounds) per variant"
python3 scripts/ab_summary.py "$OUT" custom ${AB_VARIANTS}
