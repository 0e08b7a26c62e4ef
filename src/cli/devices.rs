//! `vkdiff devices`: the Vulkan devices with the capabilities that select variants.

use std::process::ExitCode;

use vkdiff_gpu::device::Instance;

/// Prints one line per device.
pub fn run() -> Result<ExitCode, String> {
    let instance = Instance::new().map_err(|e| e.to_string())?;
    for a in instance.adapters().map_err(|e| e.to_string())? {
        println!("[{}] {}", a.index, a.caps);
    }
    Ok(ExitCode::SUCCESS)
}
