//! What a ggml tree is, read from its content and never from its folder's name: its version,
//! its git commit when it is a checkout of its own, and which upstream changes it has. Known
//! findings are scoped by it (`@has:CHANGE`, `@ggml-version:V` in known-findings.txt).

/// Upstream changes a ggml tree is recognised by, from its own source: name, what changed
/// (the upstream change), the file (relative to the ggml root; the first of the list that
/// exists is read) and the marker. Each was checked on the ggml history: absent (or present,
/// for [`Marker::Absent`]) in the parent of the change's commit and the other way in the
/// commit itself, and the same in both registry trees as the docs say.
pub const CHANGES: &[(&str, &str, &[&str], Marker)] = &[
    (
        "mmid-split",
        "MUL_MAT_ID split into chunks of at most 4096 (slot, token) pairs (llama.cpp PR 14451)",
        &["src/ggml-vulkan/ggml-vulkan.cpp"],
        Marker::Either {
            has: "4096u / nei0",
            lacks: "GGML_ASSERT(nei0 * nei1 <= 4096)",
        },
    ),
    (
        "dequant-batched-k",
        "dequant_q2_k … q6_k cover every matrix of a batch (llama.cpp PR 14683)",
        &["src/ggml-vulkan/vulkan-shaders/dequant_q2_k.comp"],
        Marker::Absent("p.M * p.K / QUANT_K"),
    ),
    (
        "mmid-m-check",
        "the scalar/coopmat1 MUL_MAT_ID store compares the row with M (llama.cpp PR 15334)",
        &["src/ggml-vulkan/vulkan-shaders/mul_mm.comp"],
        Marker::Present("+ store_r < p.M)"),
    ),
    (
        "acc-clamp",
        "f16 matmul and flash-attention results clamped to ±65504 (llama.cpp PR 15652)",
        &["src/ggml-vulkan/vulkan-shaders/mul_mm.comp"],
        Marker::Present("ACC_TYPE_MAX"),
    ),
    (
        "dequant-iq-indices",
        "dequant_iq2_s/iq3_s index and scale fixes (llama.cpp PR 15862)",
        &["src/ggml-vulkan/vulkan-shaders/dequant_iq3_s.comp"],
        Marker::Absent("scales[is] >>"),
    ),
    (
        "fa-kv-bounds",
        "flash attention compares key indices with KV (llama.cpp PR 16160)",
        &[
            "src/ggml-vulkan/vulkan-shaders/flash_attn_base.comp",
            "src/ggml-vulkan/vulkan-shaders/flash_attn_base.glsl",
        ],
        Marker::Present("KV_bounds_check"),
    ),
    (
        "fa-mask-bounds",
        "flash attention bounds-checks mask rows, no GGML_KQ_MASK_PAD assert (llama.cpp PR 16316)",
        &["src/ggml-vulkan/ggml-vulkan.cpp"],
        Marker::Absent("% GGML_KQ_MASK_PAD) == 0"),
    ),
    (
        "fa-zero-l-guard",
        "flash attention writes 0 for a row whose softmax sum is 0 (llama.cpp PR 16447)",
        &["src/ggml-vulkan/vulkan-shaders/flash_attn_split_k_reduce.comp"],
        Marker::Present("== 0.0) ? 0.0"),
    ),
    (
        "mmvid-small-n",
        "MUL_MAT_ID with up to 8 tokens on the mat-vec-id path (llama.cpp PR 18918)",
        &["src/ggml-vulkan/ggml-vulkan.cpp"],
        Marker::Present("src2->ne[1] <= 8"),
    ),
    (
        "quantize-x4-only",
        "the host creates only the x4 form of the q8_1 quantizer (llama.cpp PR 17108)",
        &["src/ggml-vulkan/ggml-vulkan.cpp"],
        Marker::Absent("\"quantize_q8_1\", quantize_q8_1"),
    ),
    (
        "mmvq-q6-intel",
        "q6_K mat-vec takes the integer-dot (MMVQ) path only on Intel (llama.cpp PR 23056)",
        &["src/ggml-vulkan/ggml-vulkan.cpp"],
        Marker::Present("bool mmvq_q6"),
    ),
    // Its commit is newer than the ggml history at hand (to 2026-08-21, where the marker is
    // absent); the recent registry tree has it.
    (
        "batch-stride",
        "matmuls read B in place with its own batch stride, not ne10·ne11 (llama.cpp PR 28956)",
        &["src/ggml-vulkan/ggml-vulkan.cpp"],
        Marker::Present("ggml_vk_batch_stride("),
    ),
];

/// How a change shows in a file.
#[derive(Debug, Clone, Copy)]
pub enum Marker {
    /// Only trees with the change contain this text.
    Present(&'static str),
    /// Only trees without the change contain this text.
    Absent(&'static str),
    /// Trees with the change contain `has` or lack `lacks`; without it, `lacks` and not `has`.
    Either {
        /// Text only trees with the change contain.
        has: &'static str,
        /// Text only trees before the change contain (and newer ones may drop).
        lacks: &'static str,
    },
}

impl Marker {
    /// Whether a file with this text has the change.
    pub fn has(&self, text: &str) -> bool {
        match *self {
            Marker::Present(m) => text.contains(m),
            Marker::Absent(m) => !text.contains(m),
            Marker::Either { has, lacks } => text.contains(has) || !text.contains(lacks),
        }
    }
}

/// The file in a folder of prebuilt ggml libraries that holds the identity of the tree they
/// were built from (one line, as [`tree_identity`] prints it).
pub const IDENTITY_FILE: &str = "vkdiff-identity.txt";

/// What a ggml tree is, read from its content (never from its folder's name): ggml's version
/// from `CMakeLists.txt` (GGML_VERSION_MAJOR/MINOR/PATCH, absent in trees before mid-2025), the
/// git commit when the tree is a checkout of its own (ggml's root or, for llama.cpp, its
/// parent; `-dirty` with local changes), and which [`CHANGES`] it has or lacks (a change whose
/// file is missing is left out of both). Printed as `ggml-version 0.9.4; git abc1234; has a b;
/// lacks c d`. A folder of prebuilt libraries has no such file: its identity is the one
/// recorded in [`IDENTITY_FILE`] when it was packed (`ci/gpu.sh stage`), else None.
pub fn tree_identity(root: &std::path::Path) -> Option<String> {
    let mut parts = Vec::new();
    let version = std::fs::read_to_string(root.join("CMakeLists.txt"))
        .ok()
        .and_then(|t| ggml_version(&t));
    parts.push(format!(
        "ggml-version {}",
        version.as_deref().unwrap_or("none")
    ));
    if let Some(commit) = git_commit(root) {
        parts.push(format!("git {commit}"));
    }
    let (mut has, mut lacks) = (Vec::new(), Vec::new());
    for (name, _, files, marker) in CHANGES {
        let text = files
            .iter()
            .find_map(|f| std::fs::read_to_string(root.join(f)).ok());
        match text {
            Some(t) if marker.has(&t) => has.push(*name),
            Some(_) => lacks.push(*name),
            None => {}
        }
    }
    if has.is_empty() && lacks.is_empty() {
        return std::fs::read_to_string(root.join(IDENTITY_FILE))
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
    }
    parts.push(format!("has {}", has.join(" ")));
    parts.push(format!("lacks {}", lacks.join(" ")));
    Some(parts.join("; "))
}

/// `MAJOR.MINOR.PATCH` from ggml's CMakeLists.txt (`set(GGML_VERSION_MAJOR 0)` …).
pub fn ggml_version(cmake: &str) -> Option<String> {
    let get = |what: &str| {
        cmake.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("set(")?.strip_prefix(what)?;
            let v = rest.trim().strip_suffix(')')?.trim();
            v.parse::<u32>().ok()
        })
    };
    Some(format!(
        "{}.{}.{}",
        get("GGML_VERSION_MAJOR")?,
        get("GGML_VERSION_MINOR")?,
        get("GGML_VERSION_PATCH")?
    ))
}

/// The short commit of a tree that is a git checkout of its own: the work tree's top is the
/// ggml root or (llama.cpp) its parent. A tree vendored inside another repository (the
/// registry's copies, a test's temp folder inside a checkout) has none.
fn git_commit(root: &std::path::Path) -> Option<String> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let top = std::fs::canonicalize(git(&["rev-parse", "--show-toplevel"])?).ok()?;
    let root = std::fs::canonicalize(root).ok()?;
    if top != root && Some(top.as_path()) != root.parent() {
        return None;
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty = git(&["status", "--porcelain", "--untracked-files=no", "--", "."])
        .is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    })
}
