#!/usr/bin/env bash
# Session 36's device call (prepared in session 35, not run). From the repository root, after
# `UPSTREAM=0.1.109 bash ci/gpu.sh stage`: makes .devbin/trees/NAME from shaders/ and NAME.patch
# (against shaders/ at 8edf90c's flash_attn.comp, unchanged since) and copies s36a.sh to .devbin/;
# then on the device (carry .gl and .devbin) `bash .devbin/s36a.sh $OUT`.
set -euo pipefail
here=$(dirname "$0")
for p in "$here"/*.patch; do
    t=.devbin/trees/$(basename "$p" .patch)
    rm -rf "$t" && mkdir -p "$(dirname "$t")" && cp -r shaders "$t"
    (cd "$t" && patch -s -p1 < "$OLDPWD/$p")
done
cp "$here/s36a.sh" .devbin/
