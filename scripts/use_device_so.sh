#!/usr/bin/env bash
# On the device machine: installs .devso/NAME.so.gz (scripts/build_device_so.sh) as torch_tk's compiled
# library in place of a build, after checking that it was built against this machine's torch.
# Usage: bash scripts/use_device_so.sh NAME   (then run Python with PYTHONPATH=<repo root>)
set -euo pipefail
cd "$(dirname "$0")/.."
# The sources a library is built from (--source-hash prints their hash; build_device_so.sh records it).
source_hash() { find csrc tools setup.py -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.cpp' -o -name '*.py' -o -name '*.hip' \) | sort | xargs sha1sum | sha1sum | cut -c1-16; }
if [ "${1:-}" = --source-hash ]; then source_hash; exit 0; fi
NAME=${1:?NAME}
if [ "$(source_hash)" != "$(cat ".devso/$NAME.source")" ]; then
  echo "use_device_so: .devso/$NAME.so.gz was built from other sources (csrc, tools or setup.py changed since): rebuild it"; exit 1
fi
want=$(cat ".devso/$NAME.torch")
have=$(python3 -c 'import torch; print(torch.version.git_version)')
if [ "$want" != "$have" ]; then echo "use_device_so: .devso/$NAME.so was built against torch $want, this is $have"; exit 1; fi
tag=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
rm -f torch_tk/_C*.so
gzip -dc ".devso/$NAME.so.gz" > "torch_tk/_C$tag"
echo "torch_tk/_C$tag <- .devso/$NAME.so.gz"
