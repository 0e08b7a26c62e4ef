//! The named path configurations a driver can be held to (`--config`): which of ggml's shader
//! families (fp32 or fp16 scalar, KHR or NV cooperative matrices) may run. The ggml driver forces
//! one through ggml's environment switches; the error models see the device's capabilities less
//! what the configuration turns off, and each kernel says which of its variants a configuration
//! never runs.

use vkdiff_gpu::DeviceCaps;

/// A named path configuration (ggml-host.md §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Config {
    /// No fp16, no cooperative matrices: the `_fp32` shaders.
    ScalarFp32,
    /// Scalar shaders with fp16.
    ScalarFp16,
    /// KHR cooperative matrices (no NV coopmat2).
    Cm1,
    /// NV cooperative matrix 2.
    Cm2,
}

/// Every configuration, in the order a campaign runs them.
pub const CONFIGS: [Config; 4] = [
    Config::ScalarFp32,
    Config::ScalarFp16,
    Config::Cm1,
    Config::Cm2,
];

impl Config {
    /// The name used by `--config` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Config::ScalarFp32 => "scalar-fp32",
            Config::ScalarFp16 => "scalar-fp16",
            Config::Cm1 => "cm1",
            Config::Cm2 => "cm2",
        }
    }

    /// The configuration named `name`.
    pub fn parse(name: &str) -> Result<Config, String> {
        CONFIGS
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = CONFIGS.iter().map(|c| c.name()).collect();
                format!(
                    "unknown configuration {name:?}; they are {}",
                    names.join(", ")
                )
            })
    }

    /// The capabilities the error models see: the device's, less what the switches turn off.
    pub fn caps(self, device: &DeviceCaps) -> DeviceCaps {
        let mut c = device.clone();
        c.integer_dot = false;
        if matches!(self, Config::ScalarFp32 | Config::ScalarFp16) {
            c.coopmat = false;
            c.coopmat2 = false;
            c.bf16_coopmat = false;
        }
        if self == Config::ScalarFp32 {
            c.fp16 = false;
        }
        if self == Config::Cm1 {
            c.coopmat2 = false;
        }
        c
    }
}
