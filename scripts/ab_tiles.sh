#!/usr/bin/env bash
# Device A/B of forced tiles, one shape at a time (TK_HOPPER_TILE forces every call of a process):
#   AB_CASES="384x6144x4096:-,0:128:144:1:1 320x8192x8192:-,1:128:160:1:1,1:128:256:1:2" bash scripts/ab_tiles.sh
# Each case is SHAPE:TILE,TILE,... ("-" = the planner's own tile); runs scripts/ab_knob.sh per case.
set -uo pipefail
for c in ${AB_CASES:?AB_CASES: space list of SHAPE:TILE,...}; do
  shape=${c%%:*} tiles=${c#*:} settings=""
  for t in ${tiles//,/ }; do [ "$t" = - ] && settings+=" -" || settings+=" TK_HOPPER_TILE=$t"; done
  AB_SHAPES=$shape AB_SETTINGS="$settings" OUT=${OUT:-/tmp/tk_ab}/${shape} bash "$(dirname "$0")/ab_knob.sh" | sed -n "/^== per shape/,\$p" | tail -n +2
done
