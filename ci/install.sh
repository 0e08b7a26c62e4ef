#!/usr/bin/env bash
# Installs what vkdiff needs on Debian 12: the Vulkan loader and Mesa's lavapipe (a CPU Vulkan
# driver, so everything runs without a GPU), and what shaderc's from-source build needs.
# Idempotent and quiet when everything is already there.
set -euo pipefail
# libvulkan-dev and spirv-headers: `vkdiff run --ggml` builds ggml's Vulkan backend (newer
# Vulkan headers, when a tree needs them, come from ci/vulkan-headers.sh).
packages=(libvulkan1 mesa-vulkan-drivers vulkan-tools vulkan-validationlayers cmake ninja-build python3 g++ git pkg-config libvulkan-dev spirv-headers)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "ci/install.sh: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null; then
    echo "ci/install.sh: cargo not found; install a Rust toolchain (1.82 or newer) with rustup" >&2
    exit 1
fi
# Debian 12 only: the newer lavapipe (Mesa 25) unpacked beside the system one, for backend mode
# (ci/lavapipe-new.sh).
if grep -qs '^12' /etc/debian_version; then
    # Optional (nothing in CI needs it): a failed download is said, not fatal.
    bash "$(dirname "$0")/lavapipe-new.sh" >/dev/null ||
        echo "ci/install.sh: the newer lavapipe could not be unpacked; the system one stays the only one" >&2
fi
