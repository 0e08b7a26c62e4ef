#!/usr/bin/env bash
# Session 35, device call 1. From the repository root, after `UPSTREAM=0.1.109 bash ci/gpu.sh stage`:
# makes .devbin/trees/NAME from shaders/ and NAME.patch (this folder's and session 34's
# prepared cm2 mask patches, both against shaders/ at this commit) and copies s35a.sh to
# .devbin/; then on the device (carry .gl and .devbin) `bash .devbin/s35a.sh $OUT`.
set -euo pipefail
here=$(dirname "$0")
for p in "$here"/*.patch "$here"/../device-s34/*.patch; do
    t=.devbin/trees/$(basename "$p" .patch)
    rm -rf "$t" && mkdir -p "$(dirname "$t")" && cp -r shaders "$t"
    (cd "$t" && patch -s -p1 < "$OLDPWD/$p")
done
cp "$here"/s35?.sh .devbin/
