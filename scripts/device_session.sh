# Sourced at the top of a device call's script (bash): the common start of every call.
#   source scripts/device_session.sh WORKDIR TAG LIB
# Installs the carried wheels (.whl/, e.g. expecttest) into /tmp/tk_site, puts the repo and it on
# PYTHONPATH, installs the prebuilt library .devso/LIB.so.gz (scripts/use_device_so.sh; named by the caller:
# a default would go stale with the next csrc change),
# writes WORKDIR/gpu.txt (GPU name, power limit, max SM clock), sets t0 (seconds) and defines
# `pack`, which tars WORKDIR into $OUT/TAG.tgz (the device tool brings back at most 8 files).
W=${1:?WORKDIR}; TAG=${2:?TAG}; LIB=${3:?LIB}; mkdir -p "$W"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tk_site .whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD:/tmp/tk_site
bash scripts/use_device_so.sh "$LIB" || exit 1
nvidia-smi -L > "$W/gpu.txt"; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv >> "$W/gpu.txt"; cat "$W/gpu.txt"
t0=$(date +%s)
pack() { tar czf "$OUT/$TAG.tgz" -C "$W" .; }
