#!/usr/bin/env bash
# Prints a directory holding Vulkan headers new enough for recent ggml trees (they use
# VK_EXT_layer_settings, which Debian 12's 1.3.239 headers lack): Debian 13's libvulkan-dev,
# unpacked once with dpkg-deb (headers only, so no glibc requirement) into the ggml cache.
# `vkdiff run --ggml` calls it when a tree needs it; the loader stays Debian 12's libvulkan.so.1.
set -euo pipefail
cache="${VKDIFF_GGML_CACHE:-$HOME/.cache/vkdiff-ggml}/vulkan-headers"
if [ -f "$cache/usr/include/vulkan/vulkan_core.h" ]; then echo "$cache/usr/include"; exit 0; fi
lists=$(mktemp -d); etc=$(mktemp -d); debs=$(mktemp -d)
trap 'rm -rf "$lists" "$etc" "$debs"' EXIT
mkdir -p "$lists/partial"
# The Debian mirror this machine's apt already uses, suite trixie.
uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$uri" ] || uri=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$uri" ] || uri=http://deb.debian.org/debian
echo "deb $uri trixie main" > "$etc/sources.list"
o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists -oDir::Etc::SourceList=$etc/sources.list -oDir::Etc::SourceParts=/dev/null"
apt-get $o update >/dev/null
(cd "$debs" && apt-get $o download libvulkan-dev 2>&1 | grep -v 'Download is performed unsandboxed' >&2 || true)
deb=$(ls "$debs"/libvulkan-dev_*.deb)
mkdir -p "$cache.tmp"
dpkg-deb -x "$deb" "$cache.tmp"
rm -rf "$cache"; mv "$cache.tmp" "$cache"
echo "vulkan-headers.sh: $(basename "$deb") unpacked into $cache" >&2
echo "$cache/usr/include"
