//! Shared by the integration tests: one device for the whole test binary (tests run on
//! several threads; the device is used by one at a time) and variant lookup.

#![allow(dead_code)]

use std::sync::Mutex;

use vkdiff::cases::{self, Kernel};
use vkdiff::kernels::Variant;
use vkdiff_gpu::Gpu;

/// Runs `f` with the test device: $VKDIFF_DEVICE, else the default (lavapipe on CI).
pub fn with_gpu<R>(f: impl FnOnce(&mut Gpu) -> R) -> R {
    static GPU: Mutex<Option<Gpu>> = Mutex::new(None);
    let mut guard = GPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if guard.is_none() {
        let gpu = Gpu::open(None).unwrap_or_else(|e| {
            panic!("no Vulkan device for the tests ({e}); run `bash ci/install.sh` first")
        });
        *guard = Some(gpu);
    }
    f(guard.as_mut().unwrap())
}

/// The table row and variant called `name`.
pub fn variant(name: &str) -> (&'static Kernel, Variant) {
    cases::select(&[], None)
        .unwrap()
        .into_iter()
        .find(|(_, v)| v.name == name)
        .unwrap_or_else(|| panic!("no variant {name} in the kernel table"))
}

/// A fresh scratch folder under the target directory's temp area.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vkdiff-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A scratch copy of our shader tree's files, for mutants and broken shaders.
pub fn shader_copy(name: &str) -> std::path::PathBuf {
    let dir = scratch(name);
    for entry in std::fs::read_dir(vkdiff::default_shader_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    dir
}
