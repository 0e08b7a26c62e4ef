//! Embeds `shaders/` in the binary (every file, by name), so an installed vkdiff carries its own
//! shader tree: see `vkdiff::default_shader_dir`. Compiles vkdiff's Vulkan layer
//! (`src/exec/ggml/layer/vkdiff_layer.c`) with the system C compiler and embeds the shared
//! object too (`src/exec/ggml/layer.rs` writes it out at run time).

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Read at run time, not with env!(): the build script binary is reused by every clone
    // that shares the build folder (cargo keys path packages relative to the workspace), and a
    // compiled-in path would embed another clone's shaders, or panic once that clone is gone.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest_dir).join("shaders");
    // A directory: cargo reruns this when any file in it changes, appears or disappears.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("shaders/ next to Cargo.toml")
        .map(|e| e.expect("readable shaders/").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut out = String::from("/// `shaders/` at build time: (file name, content).\n");
    out.push_str("pub static SHADERS: &[(&str, &str)] = &[\n");
    for f in &files {
        let name = f.file_name().unwrap().to_str().expect("UTF-8 shader names");
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            f.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("embedded_shaders.rs");
    std::fs::write(dest, out).unwrap();
    layer(Path::new(&manifest_dir));
}

/// Compiles the layer with `$CC` (else `cc`) into `OUT_DIR/libvkdiff_layer.so` and writes
/// `embedded_layer.rs`: the bytes, or an empty slice and the reason (no compiler, no Vulkan
/// headers), so vkdiff still builds and says at run time why it has no layer.
fn layer(manifest_dir: &Path) {
    let src = manifest_dir.join("src/exec/ggml/layer/vkdiff_layer.c");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-env-changed=CC");
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let so = out_dir.join("libvkdiff_layer.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let result = std::process::Command::new(&cc)
        .args([
            "-shared",
            "-fPIC",
            "-O2",
            "-fvisibility=hidden",
            "-Wall",
            "-o",
        ])
        .arg(&so)
        .arg(&src)
        .arg("-lpthread")
        .output();
    let failure = match result {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "{cc} failed: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .take(5)
                .collect::<Vec<_>>()
                .join(" / ")
        )),
        Err(e) => Some(format!("cannot run {cc}: {e}")),
    };
    let rs = match failure {
        None => format!(
            "/// vkdiff's Vulkan layer, compiled at build time.\npub static LAYER_SO: &[u8] = include_bytes!({:?});\n/// Why there is no layer (empty: there is one).\npub static LAYER_MISSING: &str = \"\";\n",
            so.display().to_string()
        ),
        Some(why) => {
            println!("cargo:warning=vkdiff's Vulkan layer was not built: {why}");
            format!(
                "/// vkdiff's Vulkan layer: not built.\npub static LAYER_SO: &[u8] = &[];\n/// Why there is no layer.\npub static LAYER_MISSING: &str = {why:?};\n"
            )
        }
    };
    std::fs::write(out_dir.join("embedded_layer.rs"), rs).unwrap();
}
