#!/usr/bin/env bash
# Stages a shader experiment for the GPU machine. Each FOLDER holds patches against shaders/
# (NAME.patch) and device scripts (*.sh) that source ci/device-calls.sh. For each patch,
# .devbin/trees/NAME = a copy of shaders/ with the patch applied; the scripts go to .devbin/.
# Usage, from the repository root (see ci/gpu.sh for the whole recipe):
#   UPSTREAM=0.1.109 bash ci/gpu.sh stage      # binary, loader, upstream tree
#   bash ci/stage-trees.sh FOLDER...           # patched trees and scripts
#   then on the device, carrying .gl and .devbin: bash .devbin/SCRIPT.sh "$OUT"
set -euo pipefail
shopt -s nullglob # a plan may have no patches
for dir in "$@"; do
    for p in "$dir"/*.patch; do
        t=.devbin/trees/$(basename "$p" .patch)
        rm -rf "$t" && mkdir -p "$(dirname "$t")" && cp -r shaders "$t"
        (cd "$t" && patch -s -p1 < "$OLDPWD/$p")
    done
    cp "$dir"/*.sh .devbin/
done
