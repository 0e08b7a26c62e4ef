#!/usr/bin/env bash
# Prints the ICD manifest of a newer lavapipe (Mesa 25 from bookworm-backports), unpacked beside
# Debian 12's own Mesa 22.3 rather than over it, so one machine offers both: point a command at
# it with VK_DRIVER_FILES=<printed path>: a newer driver for ggml's backend (Mesa 22.3 releases
# a destroyed buffer's resource twice when ggml runs its next graph; Mesa 25 does not).
# Unpacked once into ${VKDIFF_MESA_CACHE:-~/.cache/vkdiff-mesa}/<version>/; it links against
# Debian 12's own LLVM 15 and libdrm (measured to load and run with them).
set -euo pipefail
cache="${VKDIFF_MESA_CACHE:-$HOME/.cache/vkdiff-mesa}"
found=$(compgen -G "$cache/25.*/lvp_icd.json" | sort -V | tail -1 || true)
if [ -n "$found" ]; then
    echo "$found"
    exit 0
fi
if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "deb http://deb.debian.org/debian bookworm-backports main" |
        $sudo tee /etc/apt/sources.list.d/vkdiff-backports.list >/dev/null
    $sudo apt-get update -qq >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt-get download writes to the working folder; only the one package is fetched.
(cd "$work" && apt-get download -qq mesa-vulkan-drivers/bookworm-backports >&2 2>/dev/null) || {
    echo "ci/lavapipe-new.sh: cannot download mesa-vulkan-drivers from bookworm-backports" >&2
    exit 1
}
deb=$(ls "$work"/mesa-vulkan-drivers_*.deb)
version=$(dpkg-deb -f "$deb" Version)
version=${version%%-*}
dir="$cache/$version"
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
dpkg-deb -x "$deb" "$dir.tmp/root"
lib="$dir/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
[ -f "$dir.tmp/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" ] || {
    echo "ci/lavapipe-new.sh: $deb holds no libvulkan_lvp.so" >&2
    exit 1
}
# The packaged manifest names the library by file name; this one names the unpacked copy.
api=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ICD"]["api_version"])' \
    "$dir.tmp/root/usr/share/vulkan/icd.d/lvp_icd.json")
printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "%s"}}\n' \
    "$lib" "$api" >"$dir.tmp/lvp_icd.json"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "$dir/lvp_icd.json"
