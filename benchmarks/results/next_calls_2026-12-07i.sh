# 2026-12-07i: the device calls prepared for the next session (no device was lent in 07i).
# Copy each block to .device/<name>.sh (ignored) and run it as the comment says.

# ---- .device/i1.sh: CAP=200 bash .device/i1.sh; carry .devso/d71.so.gz .devso/d71.source .devso/d71.torch .whl .device/i1.sh
#!/usr/bin/env bash
# 2026-12-07i call 1: the odd-start TMA load probe, the attention neighbour probe, the read floor
# (H100 only: the H200's is on record), then bench_model runs of the default until CAP s.
set -u
W=/tmp/wi1; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD:/tmp/tk_site
bash scripts/use_device_so.sh d71 || exit 1
nvidia-smi -L > $W/gpu.txt; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv >> $W/gpu.txt; cat $W/gpu.txt
t0=$(date +%s)
pack() { tar czf $OUT/i1.tgz -C $W .; }
OUT=$W bash benchmarks/micro/run_tma_odd_start.sh > $W/odd_start.txt 2>&1; cat $W/odd_start.txt; pack
python3 benchmarks/neighbour_probe.py --probes sdpa,sdpa_bwd > $W/probe.txt 2>&1; tail -12 $W/probe.txt
echo "probe: $(( $(date +%s) - t0 )) s"; pack
if grep -q H100 $W/gpu.txt; then
  OUT=$W bash benchmarks/micro/run_tma_stream.sh > $W/stream_dirty.txt 2>&1
  TK_MICRO_L2=clean $W/tma_stream > $W/stream_clean.txt 2>&1
  echo "stream: $(( $(date +%s) - t0 )) s"; grep -h "ld.global\|W only" $W/stream_*.txt; pack
fi
for i in 1 2 3 4 5 6 7 8; do
  [ $(( $(date +%s) - t0 )) -gt ${CAP:-150} ] && break
  TORCHINDUCTOR_CACHE_DIR=/tmp/ind_flip python3 benchmarks/bench_model.py --out $W/flip$i.json > $W/flip$i.log 2>&1
  grep 'ratio tk/stock' $W/flip$i.log | sed "s/^/flip$i /"; pack
done
pack

# ---- .device/i2.sh: CAP=400 bash .device/i2.sh; carry .devso/d71.so.gz .devso/d71.source .devso/d71.torch .devso/d71s.so.gz .devso/d71s.torch .whl .device/i2.sh
# (d71s: TK_BUILD_DEFINES=TK_MBAR_SUSPEND_NS=1000000 bash scripts/build_device_so.sh d71s)
#!/usr/bin/env bash
# 2026-12-07i lead: the try_wait suspend hint (d71s = d71 built with TK_MBAR_SUSPEND_NS=1000000) on the
# H200's power-capped bench_model step, alternating with d71 in one process per run, until CAP s.
set -u
W=/tmp/wi2; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD:/tmp/tk_site
nvidia-smi -L > $W/gpu.txt; cat $W/gpu.txt
so=torch_tk/_C$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
for l in d71 d71s; do gzip -dc .devso/$l.so.gz > /tmp/tk_lib_$l.so; done
t0=$(date +%s); pack() { tar czf $OUT/i2.tgz -C $W .; }
for i in 1 2 3 4 5 6 7 8; do
  for l in d71 d71s; do
    [ $(( $(date +%s) - t0 )) -gt ${CAP:-400} ] && break 2
    cp /tmp/tk_lib_$l.so $so
    TORCHINDUCTOR_CACHE_DIR=/tmp/ind_$l python3 benchmarks/bench_model.py --out $W/${l}_$i.json > $W/${l}_$i.log 2>&1
    echo "$l run $i: $(grep -E '^stock|^tk ' $W/${l}_$i.log | tr '\n' ' ') $(grep 'ratio tk/stock' $W/${l}_$i.log)"; pack
  done
done
pack

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
