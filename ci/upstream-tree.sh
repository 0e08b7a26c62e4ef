#!/usr/bin/env bash
# Prints the path of a real upstream llama.cpp tree (with ggml-vulkan), taken from the crates.io
# package llama-cpp-sys-2, which vendors llama.cpp and follows upstream releases.
#   bash ci/upstream-tree.sh 0.1.109   # 2025-07-09, next to the pinned interface (docs/interface.md)
#   bash ci/upstream-tree.sh 0.1.161   # 2026-11-03, a recent tree
# The ggml root is <path>/ggml; the shader tree <path>/ggml/src/ggml-vulkan/vulkan-shaders.
# Only cargo's registry is used (nothing is built), so it works wherever `cargo` does.
set -euo pipefail
version="${1:?usage: upstream-tree.sh VERSION (e.g. 0.1.109 or 0.1.161)}"
scratch="${CARGO_HOME:-$HOME/.cargo}/vkdiff-upstream-fetch/$version"
mkdir -p "$scratch"
cat > "$scratch/Cargo.toml" <<TOML
[package]
name = "vkdiff-upstream-fetch"
version = "0.0.0"
edition = "2021"
[lib]
path = "lib.rs"
[dependencies]
llama-cpp-sys-2 = { version = "=$version", default-features = false }
TOML
touch "$scratch/lib.rs"
cargo fetch --quiet --manifest-path "$scratch/Cargo.toml" >&2
dir=$(cargo metadata --quiet --format-version 1 --manifest-path "$scratch/Cargo.toml" |
    python3 -c 'import json,sys; m=json.load(sys.stdin); print(next(p["manifest_path"] for p in m["packages"] if p["name"]=="llama-cpp-sys-2"))')
tree="$(dirname "$dir")/llama.cpp"
[ -d "$tree/ggml/src/ggml-vulkan" ] || { echo "upstream-tree.sh: $tree has no ggml-vulkan" >&2; exit 1; }
echo "$tree"
