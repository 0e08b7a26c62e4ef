//! Embeds `shaders/` in the binary (every file, by name), so an installed vkdiff carries its own
//! shader tree: see `vkdiff::default_shader_dir`.

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
}
