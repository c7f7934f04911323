#!/usr/bin/env bash
# On the device machine: installs .devso/NAME.so.gz (scripts/build_device_so.sh) as torch_tk's compiled
# library in place of a build, after checking that it was built against this machine's torch.
# Usage: bash scripts/use_device_so.sh NAME   (then run Python with PYTHONPATH=<repo root>)
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?NAME}
want=$(cat ".devso/$NAME.torch")
have=$(python3 -c 'import torch; print(torch.version.git_version)')
if [ "$want" != "$have" ]; then echo "use_device_so: .devso/$NAME.so was built against torch $want, this is $have"; exit 1; fi
tag=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
rm -f torch_tk/_C*.so
gzip -dc ".devso/$NAME.so.gz" > "torch_tk/_C$tag"
echo "torch_tk/_C$tag <- .devso/$NAME.so.gz"
