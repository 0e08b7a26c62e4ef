//! The named path configurations a driver can be held to (`--config`).
//!
//! `default` is what ggml does with no switch set: it picks the best shader family the device
//! offers and turns on integer dot, fusion and graph optimisation where it can. The others each
//! isolate one path: `intdot` and `force-mmvq` on a device made to report integer-dot
//! acceleration (vkdiff's layer), `no-intdot` and `no-fusion` with one production path off, and
//! the four family configurations (`scalar-fp32` … `cm2`) with one shader family forced and
//! every production path off. The ggml driver turns a configuration into ggml's environment
//! switches; the error models see the device's capabilities less what the configuration turns
//! off, and each kernel says which of its variants a shader family never runs.

use vkdiff_gpu::DeviceCaps;

/// One of ggml's shader families for matmul and flash attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// No fp16, no cooperative matrices: the `_fp32` shaders.
    ScalarFp32,
    /// Scalar shaders with fp16.
    ScalarFp16,
    /// KHR cooperative matrices (no NV coopmat2).
    Cm1,
    /// NV cooperative matrix 2.
    Cm2,
}

impl Family {
    /// The family's name (also the configuration that forces it).
    pub fn name(self) -> &'static str {
        match self {
            Family::ScalarFp32 => "scalar-fp32",
            Family::ScalarFp16 => "scalar-fp16",
            Family::Cm1 => "cm1",
            Family::Cm2 => "cm2",
        }
    }

    /// The family ggml picks by itself on a device with these capabilities (cm2 > cm1 >
    /// scalar fp16 > scalar fp32).
    pub fn best(caps: &DeviceCaps) -> Family {
        if caps.coopmat2 {
            Family::Cm2
        } else if caps.coopmat {
            Family::Cm1
        } else if caps.fp16 {
            Family::ScalarFp16
        } else {
            Family::ScalarFp32
        }
    }

    /// Narrows `caps` to what this family uses.
    fn narrow(self, c: &mut DeviceCaps) {
        if matches!(self, Family::ScalarFp32 | Family::ScalarFp16) {
            c.coopmat = false;
            c.coopmat2 = false;
            c.bf16_coopmat = false;
        }
        if self == Family::ScalarFp32 {
            c.fp16 = false;
        }
        if self == Family::Cm1 {
            c.coopmat2 = false;
        }
    }
}

/// A named path configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Config {
    /// No switch: ggml's own choices, as on a user's machine.
    Default,
    /// As `Default`, on a device that reports integer-dot acceleration (vkdiff's layer sets
    /// the property where the driver executes integer dot but does not call it accelerated).
    Intdot,
    /// As `Intdot`, with ggml's mat-vec forced onto its integer-dot (MMVQ) shaders wherever it
    /// has them (`GGML_VK_FORCE_MMVQ`, in trees that read it).
    ForceMmvq,
    /// As `Default`, with integer dot off.
    NoIntdot,
    /// As `Default`, with fusion and graph optimisation off.
    NoFusion,
    /// One shader family forced; integer dot, fusion and graph optimisation off.
    Only(Family),
}

/// Every configuration, in the order a campaign runs them.
pub const CONFIGS: [Config; 9] = [
    Config::Default,
    Config::Intdot,
    Config::ForceMmvq,
    Config::NoIntdot,
    Config::NoFusion,
    Config::Only(Family::ScalarFp32),
    Config::Only(Family::ScalarFp16),
    Config::Only(Family::Cm1),
    Config::Only(Family::Cm2),
];

/// What `run --ggml` runs without `--config`: ggml's defaults, the same on a device reporting
/// integer dot, and each shader family alone. The isolating configurations (`force-mmvq`,
/// `no-intdot`, `no-fusion`) are named when a finding needs them.
pub const DEFAULT_CONFIGS: [Config; 6] = [
    Config::Default,
    Config::Intdot,
    Config::Only(Family::ScalarFp32),
    Config::Only(Family::ScalarFp16),
    Config::Only(Family::Cm1),
    Config::Only(Family::Cm2),
];

impl Config {
    /// The name used by `--config` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Config::Default => "default",
            Config::Intdot => "intdot",
            Config::ForceMmvq => "force-mmvq",
            Config::NoIntdot => "no-intdot",
            Config::NoFusion => "no-fusion",
            Config::Only(f) => f.name(),
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

    /// The forced shader family, or None where ggml picks it.
    pub fn forced_family(self) -> Option<Family> {
        match self {
            Config::Only(f) => Some(f),
            _ => None,
        }
    }

    /// Whether the device is made to report integer-dot acceleration.
    pub fn overrides_integer_dot(self) -> bool {
        matches!(self, Config::Intdot | Config::ForceMmvq)
    }

    /// Whether ggml may take its integer-dot paths.
    pub fn integer_dot(self) -> bool {
        !matches!(self, Config::NoIntdot | Config::Only(_))
    }

    /// Whether ggml may fuse nodes.
    pub fn fusion(self) -> bool {
        !matches!(self, Config::NoFusion | Config::Only(_))
    }

    /// The family ggml runs on a device with `caps` (already narrowed by [`Config::caps`]).
    pub fn family(self, caps: &DeviceCaps) -> Family {
        self.forced_family().unwrap_or_else(|| Family::best(caps))
    }

    /// The capabilities the error models see: the device's (as ggml reports them: `family` is
    /// the family ggml says it uses), less what the switches turn off.
    pub fn caps(self, device: &DeviceCaps, family: Family) -> DeviceCaps {
        let mut c = device.clone();
        c.integer_dot &= self.integer_dot();
        self.forced_family().unwrap_or(family).narrow(&mut c);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known_ones() {
        for c in CONFIGS {
            assert_eq!(Config::parse(c.name()), Ok(c));
        }
        let e = Config::parse("fp16").unwrap_err();
        assert!(e.contains("default") && e.contains("scalar-fp16"), "{e}");
    }

    #[test]
    fn only_the_production_configurations_keep_integer_dot_and_fusion() {
        let dev = DeviceCaps {
            integer_dot: true,
            fp16: true,
            coopmat: true,
            ..DeviceCaps::default()
        };
        let default = Config::Default.caps(&dev, Family::Cm1);
        assert!(default.integer_dot && default.coopmat && default.fp16);
        assert_eq!(Config::Default.family(&default), Family::Cm1);
        assert!(!Config::NoIntdot.caps(&dev, Family::Cm1).integer_dot);
        let fp32 = Config::Only(Family::ScalarFp32).caps(&dev, Family::Cm1);
        assert!(!fp32.integer_dot && !fp32.fp16 && !fp32.coopmat);
        assert!(
            !Config::Default.caps(&dev, Family::ScalarFp16).coopmat,
            "ggml's own view of its family narrows the device"
        );
        assert!(Config::NoFusion.integer_dot() && !Config::NoFusion.fusion());
        assert!(Config::Intdot.overrides_integer_dot() && !Config::Default.overrides_integer_dot());
    }
}
