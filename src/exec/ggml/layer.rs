//! vkdiff's own Vulkan layer (`layer/vkdiff_layer.c`, compiled by `build.rs` and embedded in
//! the binary), as ggml workers use it: [`enable`] writes the shared object and its manifest
//! into a cache folder keyed by the object's hash and points the Vulkan loader at it before
//! any instance exists; [`take_bound`] reads back the SPIR-V modules of the compute pipelines
//! bound since the last call. docs/ggml-backend.md ("vkdiff's Vulkan layer") says why a layer
//! of our own and what it changes.

use std::ffi::{c_char, c_int, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

include!(concat!(env!("OUT_DIR"), "/embedded_layer.rs"));

/// The layer's name, as the manifest gives it to the loader.
pub const NAME: &str = "VK_LAYER_VKDIFF_probe";

/// The property the integer-dot override sets, as report lines name it.
pub const INTDOT_PROPERTY: &str = "integerDotProduct4x8BitPackedSignedAccelerated";

/// What the layer changes beyond recording.
#[derive(Debug, Clone, Copy, Default)]
pub struct LayerOptions {
    /// Report `integerDotProduct4x8BitPackedSignedAccelerated` on devices that execute
    /// integer dot products.
    pub intdot: bool,
}

/// The layer's library, once [`enable`] wrote it.
static LIBRARY: OnceLock<PathBuf> = OnceLock::new();

/// Writes the layer out and makes every Vulkan instance this process creates from now on load
/// it (`VK_ADD_LAYER_PATH`, so the system's layers, Khronos validation among them, stay
/// findable; `VK_INSTANCE_LAYERS`, which Debian 12's loader 1.3.239 and later honour). Call it
/// before the process starts threads and before any instance exists.
pub fn enable(options: LayerOptions) -> Result<&'static Path, String> {
    if LAYER_SO.is_empty() {
        return Err(format!(
            "this vkdiff was built without its Vulkan layer: {LAYER_MISSING}"
        ));
    }
    let dir = write_out(&cache_dir())?;
    let prepend = |var: &str, value: &str, sep: &str| {
        let v = match std::env::var(var) {
            Ok(old) if !old.is_empty() && !old.split(sep).any(|x| x == value) => {
                format!("{value}{sep}{old}")
            }
            Ok(old) if !old.is_empty() => old,
            _ => value.to_string(),
        };
        std::env::set_var(var, v);
    };
    prepend("VK_ADD_LAYER_PATH", &dir.display().to_string(), ":");
    prepend("VK_INSTANCE_LAYERS", NAME, ":");
    if options.intdot {
        std::env::set_var("VKDIFF_LAYER_INTDOT", "1");
    } else {
        std::env::remove_var("VKDIFF_LAYER_INTDOT");
    }
    let lib = dir.join("libvkdiff_layer.so");
    Ok(LIBRARY.get_or_init(|| lib).as_path())
}

/// `$XDG_CACHE_HOME/vkdiff/layer`, else `~/.cache/vkdiff/layer`.
fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("vkdiff/layer")
}

/// Writes the library and its manifest into `root/<hash>/` unless there already, each through a
/// temporary file and a rename (workers start side by side). Returns the folder.
fn write_out(root: &Path) -> Result<PathBuf, String> {
    let hash: String = Sha256::digest(LAYER_SO)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = root.join(hash);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let lib = dir.join("libvkdiff_layer.so");
    let manifest = serde_json::json!({
        "file_format_version": "1.1.2",
        "layer": {
            "name": NAME,
            "type": "GLOBAL",
            "library_path": lib.display().to_string(),
            "api_version": "1.3.239",
            "implementation_version": "1",
            "description": "vkdiff: integer-dot property override and pipeline recording",
        }
    });
    let put = |path: &Path, bytes: &[u8]| -> Result<(), String> {
        if std::fs::read(path).is_ok_and(|b| b == bytes) {
            return Ok(());
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    put(&lib, LAYER_SO)?;
    put(
        &dir.join("vkdiff_layer.json"),
        serde_json::to_string_pretty(&manifest).unwrap().as_bytes(),
    )?;
    Ok(dir)
}

/// One module bound since the last [`take_bound`]: the layer's `struct vkdiff_bound`.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawBound {
    raw: u64,
    norm: u64,
    name: [c_char; 96],
}

/// A SPIR-V module a compute pipeline bound: its hashes (`crate::exec::ggml::modules::hash`
/// and `normalised_hash` of the bytes the driver got) and the pipeline's debug name, if the
/// host named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// FNV-1a 64 of the module's bytes.
    pub raw: u64,
    /// The same with ggml's run-time float-controls additions left out.
    pub norm: u64,
    /// `vkSetDebugUtilsObjectNameEXT`'s name of the pipeline (empty: none).
    pub name: String,
}

/// The loaded layer's exported function `name`: dlopen with RTLD_NOLOAD of the path the
/// manifest names (the loader opened it by that path).
fn symbol(name: &str) -> Result<*mut libc::c_void, String> {
    let lib = LIBRARY
        .get()
        .ok_or("vkdiff's Vulkan layer was not enabled in this process")?;
    let path = CString::new(lib.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    let name = CString::new(name).unwrap();
    // SAFETY: RTLD_NOLOAD only looks the library up; the handle keeps it loaded while we hold
    // it (it is never closed: the layer stays for the process's life anyway).
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return Err(format!(
            "the Vulkan loader did not load vkdiff's layer ({}): no Vulkan instance yet, or the loader ignored VK_INSTANCE_LAYERS",
            lib.display()
        ));
    }
    // SAFETY: a valid handle and a NUL-terminated name.
    let f = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if f.is_null() {
        return Err(format!("vkdiff's layer lacks {name:?}"));
    }
    Ok(f)
}

/// The modules of the compute pipelines bound since the last call (each once), emptying the
/// layer's set.
pub fn take_bound() -> Result<Vec<Bound>, String> {
    type Take = unsafe extern "C" fn(*mut RawBound, usize) -> usize;
    type Size = unsafe extern "C" fn() -> usize;
    // SAFETY: the layer exports these with exactly these C signatures (layer/vkdiff_layer.c).
    let (take, size): (Take, Size) = unsafe {
        (
            std::mem::transmute::<*mut libc::c_void, Take>(symbol("vkdiff_layer_take_bound")?),
            std::mem::transmute::<*mut libc::c_void, Size>(symbol("vkdiff_layer_bound_size")?),
        )
    };
    // SAFETY: no arguments.
    if unsafe { size() } != std::mem::size_of::<RawBound>() {
        return Err("vkdiff's layer and binary disagree on struct vkdiff_bound".into());
    }
    const CAP: usize = 4096;
    let mut out = vec![
        RawBound {
            raw: 0,
            norm: 0,
            name: [0; 96]
        };
        CAP
    ];
    // SAFETY: `out` holds CAP elements of the layer's struct layout (checked above).
    let n = unsafe { take(out.as_mut_ptr(), CAP) };
    out.truncate(n.min(CAP));
    Ok(out
        .iter()
        .map(|b| Bound {
            raw: b.raw,
            norm: b.norm,
            name: {
                let bytes: Vec<u8> = b
                    .name
                    .iter()
                    .take_while(|&&c| c != 0)
                    .map(|&c| c as u8)
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            },
        })
        .collect())
}

/// Whether the integer-dot override changed a property query's answer in this process (false
/// where it was not asked for, or the device does not execute integer dot products).
pub fn intdot_applied() -> bool {
    type Applied = unsafe extern "C" fn() -> c_int;
    symbol("vkdiff_layer_intdot_applied")
        // SAFETY: the layer exports it with this C signature.
        .map(|f| unsafe { std::mem::transmute::<*mut libc::c_void, Applied>(f)() } != 0)
        .unwrap_or(false)
}
