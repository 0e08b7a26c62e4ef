//! What the driver's compiler made of a pipeline, as VK_KHR_pipeline_executable_properties
//! reports it (NVIDIA: register count, local memory; Mesa drivers: instruction counts, spills):
//! bench prints it next to the timings, so register pressure shows beside the time it costs.

use std::fmt;

use ash::vk;

use crate::error::{Result, VkContext};

/// One statistic's value, in the format the driver gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StatisticValue {
    /// VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR.
    Bool(bool),
    /// INT64.
    Int(i64),
    /// UINT64.
    Uint(u64),
    /// FLOAT64.
    Float(f64),
}

/// An unsigned value of 2^32 or more prints in hex: no count or size of one shader gets there,
/// so it is bits packed together, legible only in hex. NVIDIA 580.159.04 on the H100 reports its
/// "Local Memory Size" (per-thread bytes, i.e. spills) as 0x1000000000, 0x10000000f0 and
/// 0x10000001a0: the low word is the size (0 without spills; 240 and 416 bytes beside 255 and
/// 199 registers), the high word a constant 0x10 its description does not explain.
impl fmt::Display for StatisticValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatisticValue::Bool(b) => write!(f, "{}", if *b { "yes" } else { "no" }),
            StatisticValue::Int(v) => write!(f, "{v}"),
            StatisticValue::Uint(v) if *v > u32::MAX as u64 => write!(f, "{v:#x}"),
            StatisticValue::Uint(v) => write!(f, "{v}"),
            StatisticValue::Float(v) => write!(f, "{v}"),
        }
    }
}

/// One named statistic ("Register Count" 64).
#[derive(Debug, Clone, PartialEq)]
pub struct Statistic {
    /// The driver's name for it.
    pub name: String,
    /// Its value.
    pub value: StatisticValue,
}

/// One executable of a pipeline (a compute pipeline usually has one) and its statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct Executable {
    /// The driver's name for the executable.
    pub name: String,
    /// Its statistics, in the driver's order.
    pub statistics: Vec<Statistic>,
}

/// The statistics of one pipeline, with what tells it apart from the others of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineStatistics {
    /// The shader variant's name.
    pub shader: String,
    /// Its specialization constants (entry i is constant_id i).
    pub spec: Vec<u32>,
    /// Its executables.
    pub executables: Vec<Executable>,
}

impl PipelineStatistics {
    /// The shader's name with its specialization constants: `mul_mat_vec_q4_k_f32_f32[32,2,1]`.
    pub fn label(&self) -> String {
        if self.spec.is_empty() {
            return self.shader.clone();
        }
        let spec: Vec<String> = self.spec.iter().map(u32::to_string).collect();
        format!("{}[{}]", self.shader, spec.join(","))
    }
}

/// `label: Name value, Name value`; an executable's name only where there are several, each
/// executable then separated by `; `.
impl fmt::Display for PipelineStatistics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.label())?;
        if self.executables.is_empty() {
            return write!(f, " no executables reported");
        }
        let named = self.executables.len() > 1;
        for (i, e) in self.executables.iter().enumerate() {
            if i > 0 {
                write!(f, ";")?;
            }
            if named {
                write!(f, " {}:", e.name)?;
            }
            for (j, s) in e.statistics.iter().enumerate() {
                let sep = if j > 0 { "," } else { "" };
                write!(f, "{sep} {} {}", s.name, s.value)?;
            }
        }
        Ok(())
    }
}

/// Reads every executable's statistics of `pipeline`, created with CAPTURE_STATISTICS_KHR.
pub(crate) fn read(
    loader: &ash::khr::pipeline_executable_properties::Device,
    pipeline: vk::Pipeline,
) -> Result<Vec<Executable>> {
    let text = |c: std::result::Result<&std::ffi::CStr, _>| {
        c.map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    // SAFETY: a live pipeline of the loader's device; ash sizes the output vectors.
    let properties = unsafe {
        loader
            .get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline))
    }
    .during("vkGetPipelineExecutablePropertiesKHR")?;
    properties
        .iter()
        .enumerate()
        .map(|(index, p)| {
            let info = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipeline)
                .executable_index(index as u32);
            let statistics = unsafe { loader.get_pipeline_executable_statistics(&info) }
                .during("vkGetPipelineExecutableStatisticsKHR")?;
            Ok(Executable {
                name: text(p.name_as_c_str()),
                statistics: statistics
                    .iter()
                    .map(|s| Statistic {
                        name: text(s.name_as_c_str()),
                        value: value(s.format, s.value),
                    })
                    .collect(),
            })
        })
        .collect()
}

fn value(
    format: vk::PipelineExecutableStatisticFormatKHR,
    v: vk::PipelineExecutableStatisticValueKHR,
) -> StatisticValue {
    use vk::PipelineExecutableStatisticFormatKHR as F;
    // SAFETY: `format` says which member of the union the driver wrote.
    unsafe {
        match format {
            F::BOOL32 => StatisticValue::Bool(v.b32 != vk::FALSE),
            F::INT64 => StatisticValue::Int(v.i64),
            F::FLOAT64 => StatisticValue::Float(v.f64),
            // UINT64, and any later format: its bits as an unsigned number.
            _ => StatisticValue::Uint(v.u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(name: &str, value: StatisticValue) -> Statistic {
        Statistic {
            name: name.into(),
            value,
        }
    }

    #[test]
    fn statistics_print_as_one_compact_line() {
        let one = PipelineStatistics {
            shader: "mul_mat_vec_q4_k_f32_f32".into(),
            spec: vec![32, 2, 1],
            executables: vec![Executable {
                name: "Compute Shader".into(),
                statistics: vec![
                    stat("Register Count", StatisticValue::Uint(64)),
                    stat("Local Memory Size", StatisticValue::Uint(0x10_0000_00f0)),
                    stat("Stack Size", StatisticValue::Int(0)),
                    stat("Spills", StatisticValue::Bool(false)),
                    stat("Occupancy", StatisticValue::Float(0.75)),
                ],
            }],
        };
        assert_eq!(
            one.to_string(),
            "mul_mat_vec_q4_k_f32_f32[32,2,1]: Register Count 64, \
             Local Memory Size 0x10000000f0, Stack Size 0, Spills no, Occupancy 0.75"
        );
        // Several executables are told apart by name; no spec constants, no brackets.
        let two = PipelineStatistics {
            shader: "split_k_reduce".into(),
            spec: vec![],
            executables: vec![
                Executable {
                    name: "a".into(),
                    statistics: vec![stat("Registers", StatisticValue::Uint(8))],
                },
                Executable {
                    name: "b".into(),
                    statistics: vec![],
                },
            ],
        };
        assert_eq!(two.to_string(), "split_k_reduce: a: Registers 8; b:");
    }

    #[test]
    fn each_format_reads_its_own_member() {
        use vk::PipelineExecutableStatisticFormatKHR as F;
        use vk::PipelineExecutableStatisticValueKHR as V;
        assert_eq!(
            value(F::BOOL32, V { b32: vk::TRUE }),
            StatisticValue::Bool(true)
        );
        assert_eq!(value(F::INT64, V { i64: -3 }), StatisticValue::Int(-3));
        assert_eq!(value(F::UINT64, V { u64: 7 }), StatisticValue::Uint(7));
        assert_eq!(
            value(F::FLOAT64, V { f64: 1.5 }),
            StatisticValue::Float(1.5)
        );
    }
}
