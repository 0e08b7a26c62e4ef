//! ggml's SPIR-V modules by name, and which of them a tree × configuration × device can use.
//!
//! ggml's Vulkan library embeds every module as a symbol `<name>_data` (the bytes, its ELF size
//! the module's length) beside `<name>_len`. They are not exported (`.dynsym`), so
//! [`Modules::read`] reads the library's `.symtab` with a small ELF64 little-endian reader and
//! hashes each module the way vkdiff's layer does ([`hash`], [`normalised_hash`]), which turns
//! the layer's record of bound pipelines into names. A stripped library has no `.symtab`: an
//! error that says so, and callers fall back to hashes.
//!
//! [`possible`] is the coverage denominator: the modules of the four ops vkdiff tests and the
//! helpers they dispatch ([`IN_SCOPE`]), less those this configuration and device can never
//! use ([`RULES`]). docs/ggml-backend.md ("Pipeline coverage") lists both tables.

use std::collections::BTreeMap;
use std::path::Path;

use vkdiff_gpu::DeviceCaps;

/// FNV-1a 64 of `bytes` (the layer's `fnv`).
pub fn hash(bytes: &[u8]) -> u64 {
    fnv(0xcbf2_9ce4_8422_2325, bytes)
}

fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Whether the instruction `w` (its first word holds its length) is one of the float-controls
/// additions recent ggml makes to every module at run time on devices with fp16 RTE rounding or
/// fp16 denorm preservation (OpCapability DenormPreserve/RoundingModeRTE, OpExecutionMode
/// DenormPreserve/RoundingModeRTE 16, OpExtension "SPV_KHR_float_controls").
fn float_controls_addition(w: &[u32]) -> bool {
    let (op, len) = (w[0] & 0xffff, w.len());
    match op {
        17 if len == 2 => matches!(w[1], 4464 | 4467),
        16 if len == 4 => matches!(w[2], 4459 | 4462) && w[3] == 16,
        10 if len >= 2 => {
            let bytes: Vec<u8> = w[1..].iter().flat_map(|x| x.to_le_bytes()).collect();
            bytes.starts_with(b"SPV_KHR_float_controls\0")
        }
        _ => false,
    }
}

/// FNV-1a 64 of a module less its [`float_controls_addition`]s: what names a module ggml
/// patched before the driver saw it (the layer's `normalised_hash`).
pub fn normalised_hash(bytes: &[u8]) -> u64 {
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if words.len() < 5 {
        return hash(&bytes[..words.len() * 4]);
    }
    let mut h = fnv(0xcbf2_9ce4_8422_2325, &bytes[..20]);
    let mut pos = 5;
    while pos < words.len() {
        let len = (words[pos] >> 16) as usize;
        if len == 0 || pos + len > words.len() {
            return fnv(h, &bytes[pos * 4..words.len() * 4]);
        }
        if !float_controls_addition(&words[pos..pos + len]) {
            h = fnv(h, &bytes[pos * 4..(pos + len) * 4]);
        }
        pos += len;
    }
    h
}

/// The SPIR-V modules of one ggml Vulkan library.
#[derive(Debug, Clone, Default)]
pub struct Modules {
    /// Every module's name (the symbol less `_data`), sorted.
    pub names: Vec<String>,
    by_raw: BTreeMap<u64, Vec<String>>,
    by_norm: BTreeMap<u64, Vec<String>>,
}

impl Modules {
    /// Reads `libggml-vulkan.so` in `lib_dir` (or the file `lib` itself).
    pub fn read(lib: &Path) -> Result<Modules, String> {
        let path = if lib.is_dir() {
            lib.join("libggml-vulkan.so")
        } else {
            lib.to_path_buf()
        };
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let found = elf_symbols(&bytes, "_data").map_err(|e| format!("{}: {e}", path.display()))?;
        let mut m = Modules::default();
        for (name, data) in found {
            // Other `_data` symbols (tables of pointers to modules) are not SPIR-V.
            if data.len() < 20 || data[..4] != [0x03, 0x02, 0x23, 0x07] {
                continue;
            }
            let name = name.trim_end_matches("_data").to_string();
            m.by_raw.entry(hash(data)).or_default().push(name.clone());
            m.by_norm
                .entry(normalised_hash(data))
                .or_default()
                .push(name.clone());
            m.names.push(name);
        }
        if m.names.is_empty() {
            return Err(format!(
                "{}: no SPIR-V `_data` symbols in .symtab (not a ggml Vulkan library?)",
                path.display()
            ));
        }
        m.names.sort();
        Ok(m)
    }

    /// The module names a bound module's hashes stand for (the bytes as ggml built them first,
    /// then with ggml's run-time float-controls additions left out); empty when unknown.
    pub fn names_of(&self, raw: u64, norm: u64) -> Vec<String> {
        self.by_raw
            .get(&raw)
            .or_else(|| self.by_norm.get(&norm))
            .cloned()
            .unwrap_or_default()
    }
}

/// How a module the library does not hold is named: its hash.
pub fn unknown_name(raw: u64) -> String {
    format!("spirv:{raw:016x}")
}

/// Symbols of `.symtab` whose names end in `suffix`, with the bytes they cover in the file
/// (64-bit little-endian ELF; symbols in sections without file bytes are left out).
pub fn elf_symbols<'a>(elf: &'a [u8], suffix: &str) -> Result<Vec<(String, &'a [u8])>, String> {
    let short = || "truncated ELF file".to_string();
    let u16_at = |o: usize| -> Result<u16, String> {
        Ok(u16::from_le_bytes(
            elf.get(o..o + 2).ok_or_else(short)?.try_into().unwrap(),
        ))
    };
    let u32_at = |o: usize| -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            elf.get(o..o + 4).ok_or_else(short)?.try_into().unwrap(),
        ))
    };
    let u64_at = |o: usize| -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            elf.get(o..o + 8).ok_or_else(short)?.try_into().unwrap(),
        ))
    };
    if elf.len() < 64 || elf[..4] != *b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if elf[4] != 2 || elf[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let (shoff, shentsize, shnum) = (
        u64_at(0x28)? as usize,
        u16_at(0x3a)? as usize,
        u16_at(0x3c)?,
    );
    if shentsize < 64 {
        return Err("bad ELF section header size".into());
    }
    struct Section {
        kind: u32,
        addr: u64,
        offset: usize,
        size: usize,
        link: u32,
        entsize: usize,
    }
    let sections: Vec<Section> = (0..shnum as usize)
        .map(|i| {
            let o = shoff + i * shentsize;
            Ok(Section {
                kind: u32_at(o + 4)?,
                addr: u64_at(o + 16)?,
                offset: u64_at(o + 24)? as usize,
                size: u64_at(o + 32)? as usize,
                link: u32_at(o + 40)?,
                entsize: u64_at(o + 56)? as usize,
            })
        })
        .collect::<Result<_, String>>()?;
    const SHT_SYMTAB: u32 = 2;
    const SHT_NOBITS: u32 = 8;
    let symtab = sections
        .iter()
        .find(|s| s.kind == SHT_SYMTAB)
        .ok_or("no .symtab: the library was stripped (module names are unknown, only hashes)")?;
    let strtab = sections
        .get(symtab.link as usize)
        .ok_or("bad .symtab string table link")?;
    let strings = elf
        .get(strtab.offset..strtab.offset + strtab.size)
        .ok_or_else(short)?;
    let entsize = symtab.entsize.max(24);
    let mut out = Vec::new();
    for i in 0..symtab.size / entsize {
        let o = symtab.offset + i * entsize;
        let name_off = u32_at(o)? as usize;
        let shndx = u16_at(o + 6)? as usize;
        let (value, size) = (u64_at(o + 8)?, u64_at(o + 16)? as usize);
        let name = strings
            .get(name_off..)
            .and_then(|s| s.split(|&b| b == 0).next())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .unwrap_or_default();
        if !name.ends_with(suffix) || size == 0 || shndx == 0 || shndx >= 0xff00 {
            continue;
        }
        let Some(sec) = sections.get(shndx) else {
            continue;
        };
        if sec.kind == SHT_NOBITS || value < sec.addr {
            continue;
        }
        let start = sec.offset + (value - sec.addr) as usize;
        if let Some(bytes) = elf.get(start..start + size) {
            out.push((name, bytes));
        }
    }
    Ok(out)
}

/// The module families of the four ops vkdiff tests and of the helpers they dispatch, by name
/// prefix: the coverage universe before [`RULES`].
pub const IN_SCOPE: &[(&str, &str)] = &[
    (
        "mul_mat_vec_",
        "MUL_MAT / MUL_MAT_ID mat-vec (dequantizing, q8_1 integer dot, nc, p021)",
    ),
    (
        "matmul_",
        "MUL_MAT / MUL_MAT_ID matrix-matrix (scalar, cm1, cm2, mmq)",
    ),
    ("split_k_reduce", "matmul's split-k reduction"),
    (
        "quantize_q8_1",
        "B quantized to q8_1 for integer-dot mat-vec and mmq",
    ),
    ("count_experts", "MUL_MAT_ID's expert count"),
    ("flash_attn_", "FLASH_ATTN_EXT (scalar, cm1, cm2, int8)"),
    (
        "fa_",
        "FLASH_ATTN_EXT helpers: split-k reduce, mask optimisation, sparse compaction, Xe decode",
    ),
    ("rwkv_wkv7", "RWKV_WKV7"),
];

/// What [`RULES`] read: the device as the configuration leaves it.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// ggml's fp16 (shaderFloat16 and 16-bit storage, not turned off).
    pub fp16: bool,
    /// KHR cooperative matrix.
    pub coopmat: bool,
    /// NV cooperative matrix 2.
    pub coopmat2: bool,
    /// Integer dot with 4x8 packed signed acceleration (as reported: the layer's override
    /// included), not turned off.
    pub integer_dot: bool,
    /// bf16 cooperative matrices.
    pub bf16_coopmat: bool,
    /// Subgroup arithmetic in compute shaders.
    pub subgroup_arithmetic: bool,
    /// Clustered subgroup operations in compute shaders.
    pub subgroup_clustered: bool,
    /// Full subgroups can be required (subgroupSizeControl's computeFullSubgroups).
    pub full_subgroups: bool,
    /// Subgroup arithmetic with a subgroup size of at least 16 available (the default size,
    /// or the largest that size control offers).
    pub subgroup16: bool,
    /// An Intel device (Xe flash-attention decode modules, large mat-vec workgroups).
    pub intel: bool,
    /// An NVIDIA device (large mat-vec workgroups).
    pub nvidia: bool,
    /// Mesa's lavapipe (llvmpipe): a CPU device without the NVIDIA, AMD or Intel properties
    /// ggml reads a shader core count from, so its host never splits K.
    pub llvmpipe: bool,
    /// The configuration forces MMVQ (GGML_VK_FORCE_MMVQ). Not a device fact: the caller sets
    /// it from the configuration.
    pub mmvq_forced: bool,
    /// The tree's host takes q6_K mat-vec's MMVQ only on Intel (the `mmvq-q6-intel` change).
    /// Not a device fact: the caller sets it from the tree.
    pub q6_mmvq_intel_only: bool,
    /// The tree's host creates only the x4 q8_1 quantizer (the `quantize-x4-only` change).
    /// Not a device fact: the caller sets it from the tree.
    pub quantizer_x4_only: bool,
}

impl Facts {
    /// From vkdiff's view of the device, narrowed by the configuration (`Config::caps`).
    /// `integer_dot` is the device's own unless a configuration turned it off. VALVE's mixed
    /// dot2 is not among vkdiff's capabilities: see the `_dot2` rule.
    pub fn of(caps: &DeviceCaps) -> Facts {
        Facts {
            fp16: caps.fp16,
            coopmat: caps.coopmat,
            coopmat2: caps.coopmat2,
            integer_dot: caps.integer_dot,
            bf16_coopmat: caps.bf16_coopmat,
            subgroup_arithmetic: caps.subgroup_arithmetic,
            subgroup_clustered: caps.subgroup_clustered,
            full_subgroups: caps.full_subgroups,
            subgroup16: caps.subgroup_arithmetic
                && (caps.subgroup_size >= 16
                    || caps.subgroup_size_range.is_some_and(|(_, max)| max >= 16)),
            intel: caps.name.to_lowercase().contains("intel"),
            nvidia: caps.name.to_lowercase().contains("nvidia"),
            llvmpipe: caps.name.contains("llvmpipe"),
            mmvq_forced: false,
            q6_mmvq_intel_only: false,
            quantizer_x4_only: false,
        }
    }
}

/// A rule: a module matching `applies` is out of the denominator when `excluded` says so for
/// the facts; `why` is how reports name the rule.
pub struct Rule {
    /// How reports name it.
    pub why: &'static str,
    /// Whether the rule concerns this module name.
    pub applies: fn(&str) -> bool,
    /// Whether the facts rule the module out.
    pub excluded: fn(&Facts) -> bool,
}

fn is_matmul(n: &str) -> bool {
    n.starts_with("matmul_")
}

fn is_scalar_fa(n: &str) -> bool {
    n.starts_with("flash_attn_") && !n.contains("_cm1") && !n.contains("_cm2")
}

/// Helpers ggml builds from one of two modules, the `_subgroup` one where the device has
/// subgroup operations with full subgroups (arithmetic for most; ballot for the sparse
/// compaction, which vkdiff does not read apart: approximated by arithmetic).
const HELPER_TWINS: &[&str] = &[
    "count_experts",
    "fa_sparse_compact",
    "mul_mat_vec_p021_f16_f32",
];

/// The q8_1 quantizer's twins: its `_subgroup` module needs clustered subgroup operations
/// with full subgroups (Mesa 22.3's lavapipe has arithmetic but not clustered).
const QUANTIZER_TWINS: &[&str] = &["quantize_q8_1_x4", "quantize_q8_1"];

fn twin(n: &str, helpers: &[&str]) -> Option<bool> {
    helpers.iter().find_map(|h| {
        let rest = n.strip_prefix(h)?;
        match rest {
            "" => Some(false),
            r if r.starts_with("_subgroup") => Some(true),
            _ => None,
        }
    })
}

/// Dequantizing mat-vec modules of the A types whose subgroup reductions need subgroups of at
/// least 16 (k-quants, i-quants, ternary, fp4); their q8_1 (integer dot) twins do not.
fn wide_reduction(n: &str) -> bool {
    let a = n
        .strip_prefix("mul_mat_vec_id_")
        .or_else(|| n.strip_prefix("mul_mat_vec_"))
        .unwrap_or("");
    !n.contains("_q8_1")
        && [
            "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq", "tq", "mxfp4", "nvfp4",
        ]
        .iter()
        .any(|t| a.starts_with(t))
}

/// Whether ggml's scalar host (no cooperative matrix) creates a pipeline from scalar matmul
/// module `n`: it builds f32 × f32, f32 × f16 (MUL_MAT only), f16 × f16, f16 × f32, bf16 × bf16
/// and quantized × f32, with f16 accumulators only where A is f16 or quantized. The library
/// also holds quantized × f16 modules, f32-A and bf16 f16-accumulator ones, which only its
/// cooperative-matrix builds use (read in 0.1.161's `ggml_vk_load_shaders`).
fn scalar_matmul_created(n: &str) -> bool {
    let Some(rest) = n.strip_prefix("matmul_") else {
        return true;
    };
    if n.contains("_q8_1") || n.contains("_cm1") || n.contains("_cm2") {
        return true;
    }
    let (id, rest) = match rest.strip_prefix("id_") {
        Some(r) => (true, r.strip_prefix("subgroup_").unwrap_or(r)),
        None => (false, rest),
    };
    let rest = rest.strip_suffix("_fp32").unwrap_or(rest);
    let (acc16, base) = match rest.strip_suffix("_f16acc") {
        Some(b) => (true, b),
        None => (false, rest),
    };
    match base {
        "f16" | "f16_f32" => true,
        "f32_f32" | "bf16" => !acc16,
        "f32_f16" => !acc16 && !id,
        b => b.ends_with("_f32"),
    }
}

/// Whether ggml runs module `n` only with integer dot (MMVQ, MMQ, FA with integer dot and the
/// q8_1 quantizers).
pub fn needs_integer_dot(n: &str) -> bool {
    n.contains("_q8_1") || n.starts_with("quantize_q8_1") || n.ends_with("_int8")
}

fn is_mat_vec_reduction(n: &str) -> bool {
    n.starts_with("mul_mat_vec_")
        && !n.starts_with("mul_mat_vec_nc_")
        && !n.starts_with("mul_mat_vec_p021_")
}

/// The rule table: first the device features a module needs, then the twins ggml picks
/// between by a feature (one of each pair is never used on a given device). A module no rule
/// excludes stays in the denominator, so an unknown selection rule makes the percentage lower,
/// never higher.
pub const RULES: &[Rule] = &[
    Rule {
        // coopmat2 shaders (matmul, FA) need VK_NV_cooperative_matrix2.
        why: "`_cm2` needs NV coopmat2",
        applies: |n| n.contains("_cm2"),
        excluded: |f| !f.coopmat2,
    },
    Rule {
        // KHR cooperative matrix shaders; ggml prefers cm2 where both exist.
        why: "`_cm1` needs KHR coopmat (and is unused where coopmat2 serves)",
        applies: |n| n.contains("_cm1") && !n.starts_with("fa_decode_"),
        excluded: |f| !f.coopmat || f.coopmat2,
    },
    Rule {
        // bf16 cooperative matrix shaders need shaderBFloat16CooperativeMatrix.
        why: "bf16 coopmat modules need bf16 cooperative matrices",
        applies: |n| n.contains("bf16") && (n.contains("_cm1") || n.contains("_cm2")),
        excluded: |f| !f.bf16_coopmat,
    },
    Rule {
        // Intel Xe's flash-attention decode path (two phases) is created only on Intel.
        why: "`fa_decode_ph*` is Intel Xe only",
        applies: |n| n.starts_with("fa_decode_"),
        excluded: |f| !f.intel || !f.coopmat,
    },
    Rule {
        // MMVQ, MMQ, FA with integer dot and the q8_1 quantizers: integer dot, accelerated.
        why: "q8_1 / int8 modules need integer dot (accelerated 4x8 packed signed)",
        applies: needs_integer_dot,
        excluded: |f| !f.integer_dot,
    },
    Rule {
        // Scalar flash attention takes its integer-dot body only with clustered subgroup
        // operations too (the body's reductions are clustered).
        why: "FA `_int8` modules need clustered subgroup operations",
        applies: |n| is_scalar_fa(n) && n.ends_with("_int8"),
        excluded: |f| !f.subgroup_clustered,
    },
    Rule {
        // VALVE mixed float dot (shaderMixedFloatDotProductFloat16AccFloat32): vkdiff's
        // capabilities do not read it and its scalar configurations turn it off.
        why: "`_dot2` needs VK_VALVE mixed float dot (not modelled: never counted)",
        applies: |n| n.contains("_dot2"),
        excluded: |_| true,
    },
    Rule {
        // Without fp16 ggml builds matmul from the `_fp32` modules (fp32 shared memory and
        // accumulators) ... Scalar FA's `_fp32` modules stay: bf16 K/V runs them on fp16
        // devices too (measured on lavapipe, 0.1.161: `flash_attn_f32_f16_bf16` cases
        // dispatched `flash_attn_f32_f16_fp32` and `_f16acc_fp32`).
        why: "matmul `_fp32` modules are what ggml uses without fp16",
        applies: |n| is_matmul(n) && n.contains("_fp32"),
        excluded: |f| f.fp16,
    },
    Rule {
        // ... and with fp16 their other scalar twins; f16 accumulators need fp16 everywhere.
        why: "scalar matmul/FA modules without `_fp32`, and f16 accumulators, need fp16",
        applies: |n| {
            n.contains("f16acc")
                || ((is_matmul(n) || is_scalar_fa(n))
                    && !n.contains("_fp32")
                    && !n.contains("_cm1")
                    && !n.contains("_cm2"))
        },
        excluded: |f| !f.fp16,
    },
    Rule {
        // Created but never selected: the host sends bf16 experts to the matmul ID kernel
        // whatever the token count (`ggml_vk_use_mul_mat_vec_id`), and its supports_op
        // rejects bf16 × f16 MUL_MAT (no such shader pairing), in 0.1.161 as in July 2025.
        why: "bf16 mat-vec ID and bf16 × f16 mat-vec modules are never selected",
        applies: |n| {
            n.starts_with("mul_mat_vec_id_bf16_") || n.starts_with("mul_mat_vec_bf16_f16_")
        },
        excluded: |_| true,
    },
    Rule {
        // ggml splits K only with a shader core count (`ggml_vk_guess_split_k`), which it
        // reads from NVIDIA SM builtins, AMD core properties or Intel's table: never lavapipe.
        why: "`split_k_reduce` needs a device that reports shader cores (not lavapipe)",
        applies: |n| n == "split_k_reduce",
        excluded: |f| f.llvmpipe,
    },
    Rule {
        why: "scalar matmul modules the scalar host never creates (quantized × f16, f32-A and bf16 f16acc)",
        applies: |n| !scalar_matmul_created(n),
        excluded: |f| !f.coopmat && !f.coopmat2,
    },
    Rule {
        // ggml builds its matmul pipelines from one family: coopmat2 where the device has
        // it, else coopmat1, else the scalar modules (MMQ among them). Scalar bf16 stays
        // counted (a device without bf16 cooperative matrices may fall back to it).
        why: "scalar matmul modules are unused where a cooperative-matrix family serves",
        applies: |n| {
            is_matmul(n) && !n.contains("_cm1") && !n.contains("_cm2") && !n.contains("bf16")
        },
        excluded: |f| f.coopmat || f.coopmat2,
    },
    Rule {
        // Mat-vec reductions: with subgroup arithmetic ggml uses the `_subgroup` (hybrid) and
        // `_subgroup_no_shmem` modules, without it the plain (shared-memory) one ...
        why: "mat-vec `_subgroup*` modules need subgroup arithmetic",
        applies: |n| is_mat_vec_reduction(n) && !wide_reduction(n) && n.contains("_subgroup"),
        excluded: |f| !f.subgroup_arithmetic,
    },
    Rule {
        why: "plain mat-vec modules are what ggml uses without subgroup arithmetic",
        applies: |n| is_mat_vec_reduction(n) && !wide_reduction(n) && !n.contains("_subgroup"),
        excluded: |f| f.subgroup_arithmetic,
    },
    Rule {
        // Of the two subgroup modules, the `_subgroup` one (hybrid reduction) serves ggml's
        // large mat-vec workgroup, which its host picks only on NVIDIA (Turing on) and Intel;
        // elsewhere every mat-vec takes the subgroup-sized workgroup (`_subgroup_no_shmem`).
        why: "mat-vec `_subgroup` (hybrid) modules serve large workgroups: NVIDIA and Intel only",
        applies: |n| is_mat_vec_reduction(n) && n.ends_with("_subgroup"),
        excluded: |f| !(f.nvidia || f.intel),
    },
    Rule {
        // ... except that k-quant, i-quant, ternary and fp4 A types need subgroups of 16 for
        // theirs (lavapipe's are 8: they take the plain module).
        why: "k/i/tq/fp4 mat-vec `_subgroup*` modules need subgroups of at least 16",
        applies: |n| is_mat_vec_reduction(n) && wide_reduction(n) && n.contains("_subgroup"),
        excluded: |f| !f.subgroup16,
    },
    Rule {
        why: "plain k/i/tq/fp4 mat-vec modules are what ggml uses without subgroups of 16",
        applies: |n| is_mat_vec_reduction(n) && wide_reduction(n) && !n.contains("_subgroup"),
        excluded: |f| f.subgroup16,
    },
    Rule {
        // Scalar MUL_MAT_ID matmuls: ggml builds the `matmul_id_subgroup_*` set (experts
        // counted with subgroup ballots) where full subgroups of at least 16 are available,
        // else the plain `matmul_id_*` set; never both.
        why: "scalar `matmul_id_subgroup_*` modules need full subgroups of at least 16",
        applies: |n| {
            n.starts_with("matmul_id_subgroup_") && !n.contains("_cm1") && !n.contains("_cm2")
        },
        excluded: |f| !(f.subgroup_arithmetic && f.full_subgroups && f.subgroup16),
    },
    Rule {
        why: "plain scalar `matmul_id_*` modules are what ggml uses without them",
        applies: |n| {
            n.starts_with("matmul_id_")
                && !n.starts_with("matmul_id_subgroup_")
                && !n.contains("_cm1")
                && !n.contains("_cm2")
        },
        excluded: |f| f.subgroup_arithmetic && f.full_subgroups && f.subgroup16,
    },
    Rule {
        why: "q6_K MMVQ mat-vec modules: hosts with the `mmvq-q6-intel` change take them only on Intel or with MMVQ forced",
        applies: |n| n.starts_with("mul_mat_vec_q6_k_q8_1") || n.starts_with("mul_mat_vec_id_q6_k_q8_1"),
        excluded: |f| f.q6_mmvq_intel_only && !f.intel && !f.mmvq_forced,
    },
    Rule {
        why: "helpers' `_subgroup` twins need subgroup operations with full subgroups",
        applies: |n| twin(n, HELPER_TWINS) == Some(true),
        excluded: |f| !(f.subgroup_arithmetic && f.full_subgroups),
    },
    Rule {
        why: "helpers' plain twins are what ggml uses without subgroup operations",
        applies: |n| twin(n, HELPER_TWINS) == Some(false),
        excluded: |f| f.subgroup_arithmetic && f.full_subgroups,
    },
    Rule {
        why: "the plain q8_1 quantizer: hosts with the `quantize-x4-only` change create only the x4 form",
        applies: |n| n == "quantize_q8_1" || n == "quantize_q8_1_subgroup",
        excluded: |f| f.quantizer_x4_only,
    },
    Rule {
        why: "the q8_1 quantizer's `_subgroup` twins need clustered subgroup operations with full subgroups",
        applies: |n| twin(n, QUANTIZER_TWINS) == Some(true),
        excluded: |f| !(f.subgroup_clustered && f.full_subgroups),
    },
    Rule {
        why: "the q8_1 quantizer's plain twins are what ggml uses without clustered subgroup operations",
        applies: |n| twin(n, QUANTIZER_TWINS) == Some(false),
        excluded: |f| f.subgroup_clustered && f.full_subgroups,
    },
];

/// The denominator: `names` in [`IN_SCOPE`] that no [`RULES`] entry excludes, and how many
/// each rule excluded (by its `why`).
pub fn possible(names: &[String], facts: &Facts) -> (Vec<String>, BTreeMap<String, u32>) {
    let mut keep = Vec::new();
    let mut excluded = BTreeMap::<String, u32>::new();
    for n in names {
        if !IN_SCOPE.iter().any(|(p, _)| n.starts_with(p)) {
            continue;
        }
        match RULES.iter().find(|r| (r.applies)(n) && (r.excluded)(facts)) {
            Some(r) => *excluded.entry(r.why.to_string()).or_default() += 1,
            None => keep.push(n.clone()),
        }
    }
    (keep, excluded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_elf_reader_refuses_what_is_not_a_64_bit_elf() {
        assert_eq!(
            elf_symbols(b"#!/bin/sh\necho not a library\n", "_data").unwrap_err(),
            "not an ELF file"
        );
        let mut elf32 = b"\x7fELF\x01\x01".to_vec();
        elf32.resize(64, 0);
        assert!(elf_symbols(&elf32, "_data").unwrap_err().contains("64-bit"));
        let mut cut = b"\x7fELF\x02\x01".to_vec();
        cut.resize(64, 0);
        cut[0x28] = 0xff; // section headers past the end
        cut[0x3a] = 64;
        cut[0x3c] = 1;
        assert_eq!(
            elf_symbols(&cut, "_data").unwrap_err(),
            "truncated ELF file"
        );
    }

    #[test]
    fn the_elf_reader_finds_the_test_binarys_own_symbols() {
        // This test binary is an unstripped ELF whose .symtab holds this function (mangled).
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let found = elf_symbols(&exe, "").expect("a .symtab");
        let me = found
            .iter()
            .find(|(n, _)| n.contains("the_elf_reader_finds_the_test_binarys_own_symbols"))
            .expect("this function among the symbols");
        assert!(!me.1.is_empty(), "its code bytes");
        assert!(Modules::read(&std::env::current_exe().unwrap())
            .unwrap_err()
            .contains("no SPIR-V"));
    }

    #[test]
    fn float_controls_additions_do_not_change_the_normalised_hash() {
        // Header, OpCapability Shader, OpEntryPoint-like filler, OpExecutionMode LocalSize.
        let base: Vec<u32> = vec![
            0x0723_0203,
            0x0001_0000,
            0,
            10,
            0, // header
            (2 << 16) | 17,
            1, // OpCapability Shader
            (4 << 16) | 16,
            4,
            17,
            64, // OpExecutionMode %4 LocalSize 64 (3 words of operands cut)
        ];
        let mut patched = base.clone();
        patched.splice(5..5, [(2 << 16) | 17, 4467]); // OpCapability RoundingModeRTE
        let ext = b"SPV_KHR_float_controls\0\0";
        let mut ext_words = vec![(7 << 16) | 10];
        ext_words.extend(
            ext.chunks(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap())),
        );
        patched.splice(7..7, ext_words);
        patched.extend([(4 << 16) | 16, 4, 4462, 16]); // OpExecutionMode RoundingModeRTE 16
        let bytes = |w: &[u32]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
        assert_ne!(hash(&bytes(&base)), hash(&bytes(&patched)));
        assert_eq!(
            normalised_hash(&bytes(&base)),
            normalised_hash(&bytes(&patched))
        );
        // A real difference still shows.
        let mut other = base.clone();
        other[10] = 128;
        assert_ne!(
            normalised_hash(&bytes(&base)),
            normalised_hash(&bytes(&other))
        );
    }

    #[test]
    fn scalar_hosts_create_no_quantized_f16_matmuls() {
        let created = [
            "matmul_f32_f32",
            "matmul_f32_f16",
            "matmul_f16_f16acc",
            "matmul_f16_f32_f16acc",
            "matmul_bf16",
            "matmul_quant_f32_f16acc",
            "matmul_iq4_nl_f32",
            "matmul_id_subgroup_nvfp4_f32_f16acc",
            "matmul_id_f16_f32",
            "matmul_q4_0_q8_1",
            "matmul_quant_f16_cm1",
            "matmul_f32_f32_fp32",
        ];
        let never = [
            "matmul_quant_f16",
            "matmul_iq4_nl_f16_f16acc",
            "matmul_id_mxfp4_f16",
            "matmul_f32_f32_f16acc",
            "matmul_f32_f16_f16acc",
            "matmul_bf16_f16acc",
            "matmul_id_f32_f16",
        ];
        for n in created {
            assert!(scalar_matmul_created(n), "{n}");
        }
        for n in never {
            assert!(!scalar_matmul_created(n), "{n}");
        }
        let mut names: Vec<String> = never.iter().map(|s| s.to_string()).collect();
        names.push("split_k_reduce".into());
        names.push("mul_mat_vec_id_bf16_f32_f32_subgroup_no_shmem".into());
        names.push("mul_mat_vec_bf16_f16_f32".into());
        let scalar = Facts {
            fp16: true,
            llvmpipe: true,
            ..Facts::default()
        };
        assert!(possible(&names, &scalar).0.is_empty());
        // A device with shader cores keeps the split-k reduce.
        let gpu = Facts {
            llvmpipe: false,
            ..scalar
        };
        assert_eq!(possible(&names, &gpu).0, ["split_k_reduce"]);
    }

    #[test]
    fn rules_follow_the_device() {
        let names: Vec<String> = [
            "mul_mat_vec_q4_0_f32_f32",
            "mul_mat_vec_q4_0_f32_f32_subgroup",
            "mul_mat_vec_q4_0_f32_f32_subgroup_no_shmem",
            "mul_mat_vec_q4_0_q8_1_f32",
            "mul_mat_vec_q4_k_f32_f32",
            "mul_mat_vec_q4_k_f32_f32_subgroup",
            "matmul_f32_f32",
            "matmul_f32_f32_fp32",
            "matmul_f16_cm2",
            "matmul_id_q4_0_f32_fp32",
            "matmul_id_subgroup_q4_0_f32_fp32",
            "flash_attn_f32_f16_fp32",
            "flash_attn_f32_f16_fp32_int8",
            "rwkv_wkv7_f32",
            "add_f32",
        ]
        .map(String::from)
        .to_vec();
        let lavapipe = Facts {
            subgroup_arithmetic: true,
            ..Facts::default()
        };
        let (keep, excluded) = possible(&names, &lavapipe);
        assert_eq!(
            keep,
            [
                "mul_mat_vec_q4_0_f32_f32_subgroup_no_shmem",
                "mul_mat_vec_q4_k_f32_f32",
                "matmul_f32_f32_fp32",
                "matmul_id_q4_0_f32_fp32",
                "flash_attn_f32_f16_fp32",
                "rwkv_wkv7_f32"
            ]
        );
        assert_eq!(excluded.values().sum::<u32>(), 8);
        // An NVIDIA device with full subgroups of 32 takes the other twins.
        let h100 = Facts {
            subgroup_arithmetic: true,
            full_subgroups: true,
            subgroup16: true,
            nvidia: true,
            fp16: true,
            ..Facts::default()
        };
        let keep = possible(&names, &h100).0;
        assert!(keep.contains(&"mul_mat_vec_q4_0_f32_f32_subgroup".to_string()));
        // With coopmat2 ggml builds no scalar matmul (measured on the H100: none of 140 ran).
        let cm2 = possible(
            &names,
            &Facts {
                coopmat2: true,
                ..h100
            },
        )
        .0;
        assert!(cm2.contains(&"matmul_f16_cm2".to_string()));
        assert!(!cm2.iter().any(|n| n.starts_with("matmul_f32_f32")));
        assert!(!keep.contains(&"mul_mat_vec_q4_0_f32_f32".to_string()));
        assert!(!keep.contains(&"matmul_f32_f32_fp32".to_string()));
        assert!(keep.contains(&"flash_attn_f32_f16_fp32".to_string()));
        let fp32 = possible(
            &names,
            &Facts {
                fp16: false,
                ..h100
            },
        )
        .0;
        assert!(fp32.contains(&"matmul_id_subgroup_q4_0_f32_fp32".to_string()));
        assert!(!fp32.contains(&"matmul_id_q4_0_f32_fp32".to_string()));
        let with_intdot = Facts {
            integer_dot: true,
            subgroup_arithmetic: false,
            ..lavapipe
        };
        let keep = possible(&names, &with_intdot).0;
        assert!(keep.contains(&"mul_mat_vec_q4_0_q8_1_f32".to_string()));
        // Integer-dot flash attention also needs clustered subgroup operations (Mesa 25's
        // lavapipe has them, 22.3's does not).
        assert!(!keep.contains(&"flash_attn_f32_f16_fp32_int8".to_string()));
        let clustered = Facts {
            subgroup_clustered: true,
            ..with_intdot
        };
        assert!(possible(&names, &clustered)
            .0
            .contains(&"flash_attn_f32_f16_fp32_int8".to_string()));
        // The q8_1 quantizer's subgroup twin needs clustered operations, not arithmetic alone.
        let quantizer = ["quantize_q8_1_x4", "quantize_q8_1_x4_subgroup"].map(String::from);
        let full = Facts {
            full_subgroups: true,
            ..with_intdot
        };
        let arithmetic = Facts {
            subgroup_arithmetic: true,
            ..full
        };
        assert_eq!(possible(&quantizer, &arithmetic).0, ["quantize_q8_1_x4"]);
        let clustered = Facts {
            subgroup_clustered: true,
            ..full
        };
        assert_eq!(
            possible(&quantizer, &clustered).0,
            ["quantize_q8_1_x4_subgroup"]
        );
        // q6_K's MMVQ: only Intel or a forced MMVQ where the tree's host says so.
        let q6 = ["mul_mat_vec_q6_k_q8_1_f32"].map(String::from);
        let recent = Facts {
            q6_mmvq_intel_only: true,
            ..with_intdot
        };
        assert!(possible(&q6, &recent).0.is_empty());
        let forced = Facts {
            mmvq_forced: true,
            ..recent
        };
        let intel = Facts {
            intel: true,
            ..recent
        };
        for facts in [&with_intdot, &forced, &intel] {
            assert_eq!(possible(&q6, facts).0, q6);
        }
        // The plain quantizer: gone from hosts that create only the x4 form.
        let x4_only = Facts {
            quantizer_x4_only: true,
            ..arithmetic
        };
        assert_eq!(possible(&quantizer, &x4_only).0, ["quantize_q8_1_x4"]);
        let both = ["quantize_q8_1", "quantize_q8_1_x4"].map(String::from);
        assert_eq!(possible(&both, &x4_only).0, ["quantize_q8_1_x4"]);
        assert_eq!(possible(&both, &arithmetic).0, both);
    }
}
