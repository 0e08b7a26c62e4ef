//! Errors of the GPU side. Each one says what was wrong so a campaign can record it against the
//! case and go on with the next one.

use ash::vk;

/// Everything that can go wrong between a shader source and a result read back.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    /// The Vulkan loader (libvulkan.so.1) could not be opened.
    #[error("no Vulkan loader: {0} (install libvulkan1, and mesa-vulkan-drivers for lavapipe)")]
    NoLoader(String),
    /// No physical device matched, or none exists.
    #[error("no Vulkan device: {0}")]
    NoDevice(String),
    /// A shader file the variant needs is not in the shader tree (e.g. an upstream tree that
    /// predates the kernel). Reported as "missing", never as a failure.
    #[error("shader file {file} not found in {dir}")]
    MissingShader {
        /// File name within the tree.
        file: String,
        /// The tree.
        dir: String,
    },
    /// glslang rejected the source.
    #[error("compiling {variant} ({file}) failed:\n{message}")]
    Compile {
        /// Upstream-style variant name.
        variant: String,
        /// Main source file.
        file: String,
        /// The compiler's messages (file:line: error: ...).
        message: String,
    },
    /// The device reported VK_ERROR_DEVICE_LOST: the context must be recreated.
    #[error("device lost during {during}")]
    DeviceLost {
        /// What was running.
        during: String,
    },
    /// Host or device memory ran out, or the request exceeds a device limit.
    #[error("out of memory: {what}")]
    OutOfMemory {
        /// What was being allocated, with its size.
        what: String,
    },
    /// The case needs something this device does not have.
    #[error("unsupported by this device: {0}")]
    Unsupported(String),
    /// Any other Vulkan failure.
    #[error("{call} failed: {code:?}")]
    Vk {
        /// The Vulkan entry point.
        call: &'static str,
        /// The result code.
        code: vk::Result,
    },
    /// The validation layer reported these messages (with `VKDIFF_VALIDATE`).
    #[error("validation layer: {}", .0.join("; "))]
    Validation(Vec<String>),
    /// Reading or writing the SPIR-V cache failed (never fatal: the shader is compiled anyway).
    #[error("io: {0}")]
    Io(String),
}

impl GpuError {
    /// Maps a Vulkan result code from `call` to the typed error a campaign can act on.
    pub fn vk(call: &'static str, code: vk::Result) -> Self {
        match code {
            vk::Result::ERROR_DEVICE_LOST => GpuError::DeviceLost {
                during: call.into(),
            },
            vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => {
                GpuError::OutOfMemory {
                    what: format!("{call}: {code:?}"),
                }
            }
            _ => GpuError::Vk { call, code },
        }
    }

    /// True when the device must be recreated before anything else can run.
    pub fn is_device_lost(&self) -> bool {
        matches!(self, GpuError::DeviceLost { .. })
    }
}

/// Result type of the GPU crate.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;

/// Adds the call name to a raw `VkResult`.
pub(crate) trait VkContext<T> {
    fn during(self, call: &'static str) -> Result<T>;
}

impl<T> VkContext<T> for std::result::Result<T, vk::Result> {
    fn during(self, call: &'static str) -> Result<T> {
        self.map_err(|code| GpuError::vk(call, code))
    }
}
