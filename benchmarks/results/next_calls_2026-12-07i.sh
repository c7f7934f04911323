# 2026-12-07i: the device calls prepared for the next session (no device was lent in 07i).
# Copy each block to .device/<name>.sh (ignored) and run it as the comment says.

# (.device/i1.sh was i3.sh's probes followed, on an H100 only, by the read floor of 2026-12-07h lead (b):
#    OUT=$W bash benchmarks/micro/run_tma_stream.sh > $W/stream_dirty.txt; TK_MICRO_L2=clean $W/tma_stream > $W/stream_clean.txt
#  then bench_model runs of d71 until CAP s.)
# (.device/i2.sh, the d71 / d71s alternation alone, is i3.sh's loop; d71s: TK_BUILD_DEFINES=TK_MBAR_SUSPEND_NS=1000000 bash scripts/build_device_so.sh d71s)

# ---- .device/i3.sh (i1 and i2 in one call, as tried at the end of 07i): CAP=300 bash .device/i3.sh; carry .devso/d71.so.gz .devso/d71.source .devso/d71.torch .devso/d71s.so.gz .whl .device/i3.sh
# (both libraries gzip -9: with gzip -1 they and the tree pass the tool's 64-MiB carry limit)
#!/usr/bin/env bash
# 2026-12-07i: the odd-start TMA load probe, the attention neighbour probe, then bench_model alternating
# d71 / d71s (d71 + TK_MBAR_SUSPEND_NS=1000000), one process per run, until CAP s.
set -u
W=/tmp/wi3; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD:/tmp/tk_site
bash scripts/use_device_so.sh d71 || exit 1
nvidia-smi -L > $W/gpu.txt; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv >> $W/gpu.txt; cat $W/gpu.txt
t0=$(date +%s); pack() { tar czf $OUT/i3.tgz -C $W .; }
OUT=$W timeout 60 bash benchmarks/micro/run_tma_odd_start.sh > $W/odd_start.txt 2>&1; cat $W/odd_start.txt; pack
timeout 150 python3 benchmarks/neighbour_probe.py --probes sdpa,sdpa_bwd > $W/probe.txt 2>&1; tail -12 $W/probe.txt
echo "probes: $(( $(date +%s) - t0 )) s"; pack
so=torch_tk/_C$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
for l in d71 d71s; do gzip -dc .devso/$l.so.gz > /tmp/tk_lib_$l.so; done
for i in 1 2 3 4 5 6 7 8; do
  for l in d71s d71; do
    [ $(( $(date +%s) - t0 )) -gt ${CAP:-300} ] && break 2
    cp /tmp/tk_lib_$l.so $so
    TORCHINDUCTOR_CACHE_DIR=/tmp/ind_$l python3 benchmarks/bench_model.py --out $W/${l}_$i.json > $W/${l}_$i.log 2>&1
    echo "$l run $i: $(grep -E '^stock|^tk ' $W/${l}_$i.log | tr '\n' ' ') $(grep 'ratio tk/stock' $W/${l}_$i.log)"; pack
  done
done
pack
