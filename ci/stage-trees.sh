#!/usr/bin/env bash
# Stages a device plan (docs/plans/device-sNN/): for each NAME.patch in the given folders,
# .devbin/trees/NAME = a copy of shaders/ with the patch applied (patches are against
# shaders/ at the plan's commit), and the folders' device scripts (sNN?.sh) in .devbin/.
# From the repository root, after `UPSTREAM=0.1.109 bash ci/gpu.sh stage`; then on the device
# (carry .gl and .devbin) `bash .devbin/sNNa.sh $OUT`.
set -euo pipefail
shopt -s nullglob # a plan may have no patches
for dir in "$@"; do
    for p in "$dir"/*.patch; do
        t=.devbin/trees/$(basename "$p" .patch)
        rm -rf "$t" && mkdir -p "$(dirname "$t")" && cp -r shaders "$t"
        (cd "$t" && patch -s -p1 < "$OLDPWD/$p")
    done
    cp "$dir"/s[0-9][0-9]?.sh .devbin/
done
