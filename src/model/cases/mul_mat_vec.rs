//! MUL_MAT cases that upstream routes to the matrix-vector kernel: dst.ne1 = 1 (any batches,
//! broadcast over dim 2), or 2..8 columns without batches (NUM_COLS > 1).

pub mod bounds;
pub mod epilogue;

use std::fmt;

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use vkdiff_gpu::runners;
use vkdiff_reference::ops::mul_mat;
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::data::{tensor, Blocks, Dist};
use super::{CaseModel, Outcome};
use crate::model::driver::{Ctx, GraphOp, Tail};
use crate::model::work::BenchShapes;
use crate::model::work::Work;
use crate::model::facts::{bucket, k_fact, k_size, rows};
use crate::model::kernels::KernelDef;
use crate::model::tolerance::{self, Fp};

/// A types the mat-vec kernel takes, in table order: the float types, then every weight
/// quantization the reference decodes.
pub fn a_types() -> impl Iterator<Item = DType> {
    [DType::F32, DType::F16, DType::Bf16]
        .into_iter()
        .chain(DType::WEIGHT_QUANTS.iter().copied())
}

/// One MUL_MAT through the mat-vec kernel: dst (M, N, ne02·r2, ne03) = A (K, M, ne02, ne03) × B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MulMatVecCase {
    /// A's type.
    pub a_type: DType,
    /// B's type (f32 or f16).
    pub b_type: DType,
    /// Inner dimension (ne00 = ne10).
    pub k: usize,
    /// Rows of A = dst.ne0.
    pub m: usize,
    /// Columns of B = dst.ne1.
    pub n: usize,
    /// A's dim-2 batches.
    pub ne02: usize,
    /// Broadcast factor over dim 2: ne12 = ne02·r2.
    pub r2: usize,
    /// Dim-3 batches of A and B (Vulkan requires ne03 = ne13).
    pub ne03: usize,
    /// Extra elements between B's rows (0: contiguous). The host copies B to contiguous first.
    pub b_row_pad: usize,
    /// A's data.
    pub a_blocks: Blocks,
    /// B's data.
    pub b_dist: Dist,
    /// Data seed.
    pub seed: u64,
    /// The nodes the graph puts after the MUL_MAT (none: the op alone).
    #[serde(default, skip_serializing_if = "Epilogue::is_none")]
    pub epilogue: Epilogue,
    /// How A lies in memory (dense unless said).
    #[serde(default, skip_serializing_if = "ALayout::is_dense")]
    pub a_layout: ALayout,
}

/// A's memory layout. An f16 A that is a view, as attention without flash attention reads the
/// KV cache, goes to ggml's own mat-vec kernels for it: `mul_mat_vec_nc_f16_f32` for rows
/// further apart than K (a view of wider rows), `mul_mat_vec_p021_f16_f32` for a 0213
/// permutation of A and B (heads interleaved within each row of the cache).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ALayout {
    /// Rows K elements apart, matrices one after another.
    #[default]
    Dense,
    /// Each row `pad` elements longer than K (a view of the first K).
    RowPad(usize),
    /// Stored as (K, ne02, M): A's dim-1 and dim-2 strides swapped (a 0213 permute), and B
    /// stored as (K, ne12) viewed as (K, 1, ne12) the same way.
    Permuted,
}

impl ALayout {
    /// A dense A.
    pub fn is_dense(&self) -> bool {
        *self == ALayout::Dense
    }

    /// The variant of ggml's kernel for this layout (None: the dense kernels).
    pub fn variant(self) -> Option<&'static str> {
        match self {
            ALayout::Dense => None,
            ALayout::RowPad(_) => Some("mul_mat_vec_nc_f16_f32"),
            ALayout::Permuted => Some("mul_mat_vec_p021_f16_f32"),
        }
    }
}

/// The element-wise nodes after the MUL_MAT in a decode graph, which ggml's Vulkan host fuses
/// into the mat-vec dispatch where dst is one row (N = 1, no batches) and fusion is on
/// ([`epilogue`]); at 2–8 columns it runs them as nodes of their own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Epilogue {
    /// The MUL_MAT alone.
    #[default]
    None,
    /// `ggml_add(mm, bias)`, bias [M] broadcast over the columns (a dense layer's bias).
    Add,
    /// Then `ggml_add(·, r)`, r of dst's shape [M, N] (a residual).
    AddAdd,
}

impl Epilogue {
    /// No nodes after the MUL_MAT.
    pub fn is_none(&self) -> bool {
        *self == Epilogue::None
    }

    /// The suffix of the variant name: `+add`, `+add+add`.
    pub fn suffix(self) -> &'static str {
        match self {
            Epilogue::None => "",
            Epilogue::Add => "+add",
            Epilogue::AddAdd => "+add+add",
        }
    }
}

/// The A types of the fused-graph variants (B f32, as decode graphs have it): the float
/// weights and the common 4-bit, 8-bit and K-quant blocks (MXFP4 has its own work).
pub const FUSED_TYPES: [DType; 5] = [DType::F32, DType::F16, DType::Q4_0, DType::Q8_0, DType::Q4_K];

/// The matrix-vector kernel (registry line in `src/model/cases/mod.rs`).
pub struct MulMatVec;

/// The lattice i-quants (iq1_s … iq3_s), which the bench leaves out: every other mat-vec weight
/// type gets bench rows.
const UNBENCHED_TYPES: [DType; 7] = [
    DType::Iq1S,
    DType::Iq1M,
    DType::Iq2Xxs,
    DType::Iq2Xs,
    DType::Iq2S,
    DType::Iq3Xxs,
    DType::Iq3S,
];

/// The mat-vec weight types whose rows also sweep the column count by default: the common
/// ones, each standing for a decode path (float, 4-bit and 8-bit legacy blocks, K-quants).
pub const COLUMN_SWEEP_TYPES: [DType; 4] = [DType::F16, DType::Q4_0, DType::Q8_0, DType::Q4_K];

impl KernelDef for MulMatVec {
    type Case = MulMatVecCase;
    type Params = (DType, DType, Epilogue, ALayout);
    const NAME: &'static str = "mul_mat_vec";
    const SHADER: &'static str = "mul_mat_vec.comp";
    const SUMMARY: &'static str = "matrix × vector MUL_MAT (dst.ne1 ≤ 8), A in f32/f16/bf16/q4_0..q8_0/q2_K..q6_K (mul_mat_vec_q*_k.comp)/iq1_s..iq3_s (mul_mat_vec_iq*.comp)/iq4_nl/iq4_xs/mxfp4/nvfp4/q1_0/q2_0/tq1_0/tq2_0 (mul_mat_vec_tq*.comp), B f32/f16";
    const ERROR_MODEL: &'static str = "γ(per-invocation chain + ⌈log₂ BLOCK_SIZE⌉)·Σ|a·b|, chain by body: float ⌈K/BS⌉+3, blocks 8·⌈K/8BS⌉ [+1 min], K-quants and iq1..iq3 16+S [2S with min]; mxfp4 also its flushed scales and a floor scaled by its block scales (src/model/cases/mul_mat_vec/bounds.rs, src/model/cases/mxfp4.rs); +add: one f32 rounding per node (src/model/cases/mul_mat_vec/epilogue.rs); with integer dot, B quantized to q8_1 (src/model/cases/intdot.rs)";

    fn variants() -> Vec<(String, Self::Params)> {
        let mut v = Vec::new();
        for a in a_types() {
            for b in [DType::F32, DType::F16] {
                // bf16 × f16 is rejected by upstream's supports_op: no such variant is ever selected.
                if a == DType::Bf16 && b == DType::F16 {
                    continue;
                }
                let p = (a, b, Epilogue::None, ALayout::Dense);
                v.push((runners::mul_mat_vec::variant(a, b).name, p));
            }
        }
        for e in [Epilogue::Add, Epilogue::AddAdd] {
            for a in FUSED_TYPES {
                let name = runners::mul_mat_vec::variant(a, DType::F32).name + e.suffix();
                v.push((name, (a, DType::F32, e, ALayout::Dense)));
            }
        }
        // ggml's kernels for an f16 A view (B f32); the row pad is drawn.
        for layout in [ALayout::RowPad(1), ALayout::Permuted] {
            let name = layout.variant().expect("a view").to_string();
            v.push((name, (DType::F16, DType::F32, Epilogue::None, layout)));
        }
        v
    }

    fn strategy(p: &Self::Params) -> BoxedStrategy<Self::Case> {
        let epilogue = p.2;
        if !p.3.is_dense() {
            return view_strategy(p.3).boxed();
        }
        if epilogue.is_none() {
            return strategy(p.0, p.1).boxed();
        }
        // Decode shapes: one column (the fused one) or 2–8 without batches.
        strategy(p.0, p.1)
            .prop_map(move |c| MulMatVecCase {
                ne02: 1,
                r2: 1,
                ne03: 1,
                epilogue,
                ..c
            })
            .boxed()
    }

    const BENCH_ORDER: u8 = 1;
    /// Every weight type at 4096×4096, 14336×4096 and 4096×14336, one column; the common types (every type with `all`) also with 2–8 columns.
    fn bench_rows(shapes: &BenchShapes) -> Vec<(String, Self::Case)> {
        let weights = Blocks::Quantized(Dist::Normal);
        let mut rows = Vec::new();
        let mut push = |label: String, case| rows.push((label, case));
        for a_type in a_types().filter(|t| !UNBENCHED_TYPES.contains(t)) {
            let sweep = shapes.all || COLUMN_SWEEP_TYPES.contains(&a_type);
            for (m, k, cols) in [
                (4096, 4096, &[1, 2, 4, 8][..]),
                (14336, 4096, &[1, 8][..]),
                (4096, 14336, &[1, 8][..]),
            ] {
                for &n in cols.iter().filter(|&&n| n == 1 || sweep) {
                    let (m, k) = (shapes.dim(m), shapes.dim(k));
                    let case = MulMatVecCase {
                        a_type,
                        b_type: DType::F32,
                        k,
                        m,
                        n,
                        ne02: 1,
                        r2: 1,
                        ne03: 1,
                        b_row_pad: 0,
                        a_blocks: weights,
                        b_dist: Dist::Normal,
                        seed: 1,
                        epilogue: Epilogue::None,
                        a_layout: ALayout::Dense,
                    };
                    push(
                        format!("{m}×{k} {a_type} · {n} col"),
                        case,
                    );
                }
            }
        }
        rows
    }
}

/// Sizes around every block and workgroup edge, small first; rare huge M exercises the
/// 64-slice z dispatch used past maxComputeWorkGroupCount. K counts blocks for block formats
/// (up to 130 of 32 elements, 48 of 256: enough super-blocks per invocation to repeat the
/// per-invocation loop many times at BLOCK_SIZE 16…64 while keeping cases cheap).
pub fn strategy(a: DType, b: DType) -> impl Strategy<Value = MulMatVecCase> {
    let block = a.block_len();
    // Past 4096 now and then for every block size (ggml's hosts change paths there).
    let most_blocks = if block >= 256 { 48 } else { 160 };
    let k = if block > 1 {
        prop_oneof![4 => 1usize..=4, 3 => 5usize..=16, 1 => 17usize..=most_blocks]
            .prop_map(move |n| n * block)
            .boxed()
    } else {
        prop_oneof![4 => 1usize..=64, 3 => 65usize..=520, 1 => 521usize..=5000].boxed()
    };
    let m = prop_oneof![40 => 1usize..=16, 30 => 17usize..=130, 10 => 131usize..=1100, 1 => 65530usize..=66000];
    let n = prop_oneof![3 => Just(1usize), 1 => 2usize..=8];
    let batches = (1usize..=2, 1usize..=3, 1usize..=2);
    let pad = prop_oneof![3 => Just(0usize), 1 => 1usize..=5];
    (
        k,
        m,
        n,
        batches,
        pad,
        Blocks::ieee_strategy(),
        Dist::ieee_strategy(),
        any::<u64>(),
    )
        .prop_map(
            move |(k, m, n, (ne02, r2, ne03), b_row_pad, a_blocks, b_dist, seed)| {
                // Several columns go to the mat-vec kernel only without batches (interface.md
                // §4.3); with batches they are a matrix-matrix case. The huge-M rows stay narrow to
                // keep the case cheap.
                let (ne02, r2, ne03) = if n > 1 { (1, 1, 1) } else { (ne02, r2, ne03) };
                let k = if m > 60000 { k.min(64.max(block)) } else { k };
                MulMatVecCase {
                    a_type: a,
                    b_type: b,
                    k,
                    m,
                    n,
                    ne02,
                    r2,
                    ne03,
                    b_row_pad,
                    a_blocks,
                    b_dist,
                    seed,
                    epilogue: Epilogue::None,
                    a_layout: ALayout::Dense,
                }
            },
        )
}

/// f16 A views (B f32, one column), as attention without flash attention multiplies the KV
/// cache: rows padded beyond K with any batches, or a 0213 permutation of A and B with
/// grouped-query broadcast (ne02 ≥ 2: with one matrix the permutation is the dense layout).
pub fn view_strategy(layout: ALayout) -> impl Strategy<Value = MulMatVecCase> {
    let permuted = layout == ALayout::Permuted;
    let pad = if permuted {
        Just(0usize).boxed()
    } else {
        prop_oneof![1usize..=8, Just(64usize)].boxed()
    };
    let batches = if permuted {
        (2usize..=8, 1usize..=4, Just(1usize)).boxed()
    } else {
        (1usize..=3, 1usize..=3, 1usize..=2).boxed()
    };
    (
        strategy(DType::F16, DType::F32),
        pad,
        batches,
        prop_oneof![3 => Just(0usize), 1 => 1usize..=5],
    )
        .prop_map(move |(c, pad, (ne02, r2, ne03), b_row_pad)| MulMatVecCase {
            n: 1,
            ne02,
            r2,
            ne03,
            b_row_pad: if permuted { 0 } else { b_row_pad },
            m: c.m.min(4096),
            a_layout: if permuted {
                ALayout::Permuted
            } else {
                ALayout::RowPad(pad)
            },
            ..c
        })
}

impl fmt::Display for MulMatVecCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}×{} K={} M={} N={} batches {}·{}×{} pad {} A {:?} B {:?} seed {}{}{}",
            self.a_type,
            self.b_type,
            self.k,
            self.m,
            self.n,
            self.ne02,
            self.r2,
            self.ne03,
            self.b_row_pad,
            self.a_blocks,
            self.b_dist,
            self.seed,
            match self.epilogue {
                Epilogue::None => String::new(),
                e => format!(" graph {}", &e.suffix()[1..]),
            },
            match self.a_layout {
                ALayout::Dense => String::new(),
                ALayout::RowPad(p) => format!(" A rows padded by {p}"),
                ALayout::Permuted => " A and B permuted 0213".into(),
            }
        )
    }
}

impl CaseModel for MulMatVecCase {
    fn variant(&self) -> String {
        match self.a_layout.variant() {
            Some(view) => view.to_string(),
            None => {
                runners::mul_mat_vec::variant(self.a_type, self.b_type).name
                    + self.epilogue.suffix()
            }
        }
    }

    fn validate(&self) -> Result<(), String> {
        if !a_types().any(|t| t == self.a_type) {
            return Err(format!("mat-vec A may not be {}", self.a_type));
        }
        if !matches!(self.b_type, DType::F32 | DType::F16) {
            return Err(format!("mat-vec B must be f32 or f16, not {}", self.b_type));
        }
        if let Some(view) = self.a_layout.variant() {
            // The cases of ggml's two view kernels; other views of A are not modelled.
            let permuted = self.a_layout == ALayout::Permuted;
            let fits = self.a_type == DType::F16
                && self.b_type == DType::F32
                && self.n == 1
                && self.epilogue.is_none()
                && self.a_layout != ALayout::RowPad(0)
                && (!permuted || (self.ne02 >= 2 && self.ne03 == 1 && self.b_row_pad == 0));
            if !fits {
                return Err(format!(
                    "{view} cases are f16 × f32, N = 1, no graph after it, a row pad ≥ 1, \
                     and when permuted ne02 ≥ 2, ne03 = 1 and B unpadded"
                ));
            }
        }
        if self.k % self.a_type.block_len() != 0 {
            return Err(format!(
                "K = {} is not a multiple of {}'s block size {}",
                self.k,
                self.a_type,
                self.a_type.block_len()
            ));
        }
        super::check_sizes(
            "A",
            &[
                ("K", self.k),
                ("M", self.m),
                ("ne02", self.ne02),
                ("ne03", self.ne03),
            ],
        )?;
        let padded = self.k.saturating_add(self.b_row_pad);
        super::check_sizes(
            "B",
            &[
                ("K + pad", padded),
                ("N", self.n),
                ("ne02", self.ne02),
                ("r2", self.r2),
                ("ne03", self.ne03),
            ],
        )
    }

    fn evaluate(&self, ctx: &mut Ctx) -> Outcome {
        if let Some(reason) = ctx.driver.fused_skip().filter(|_| !self.epilogue.is_none()) {
            return Outcome::Skip(reason);
        }
        if let Some(skip) = super::later_type_skip(ctx, self.a_type) {
            return skip;
        }
        let (a, b) = match self.inputs() {
            Ok(x) => x,
            Err(e) => return Outcome::Skip(format!("invalid case: {e}")),
        };
        if let Err(reason) = runners::mul_mat_vec::precondition(&a, &b) {
            return Outcome::Skip(format!("precondition: {reason}"));
        }
        let (want, magnitude) = match (mul_mat::mul_mat(&a, &b), mul_mat::mul_mat_magnitude(&a, &b))
        {
            (Ok(w), Ok(m)) => (w, m),
            (Err(e), _) | (_, Err(e)) => {
                return Outcome::Skip(format!("ggml rejects the shapes: {e}"))
            }
        };
        // ggml's view kernels (nc, p021) sum in an order vkdiff does not model: a block size of
        // one gives the bound of any order of K additions.
        let block_size = if self.a_layout.is_dense() {
            runners::mul_mat_vec::spec_constants(ctx.caps(), self.a_type, self.n as u32)[0]
        } else {
            1
        };
        let mut bounds =
            crate::model::cases::mul_mat_vec::bounds::mul_mat_vec_bounds_of(&magnitude.values, self.k, block_size, self.a_type);
        // NaN and ±∞: IEEE propagation through f32 arithmetic on the operands as stored (their
        // format says what may be flushed); block formats as `dot_special` says.
        let mut expected = want.values.clone();
        let b_rows = match b.rows() {
            Ok(r) => r,
            Err(e) => return Outcome::Error(e.to_string()),
        };
        let columns = super::batched_columns(self.n, self.ne02, self.r2, self.ne03, self.m);
        if let Err(e) =
            super::mxfp4::add_mat_vec_terms(&mut bounds, &a, &b_rows, self.k, self.m, &columns)
        {
            return Outcome::Error(e);
        }
        let fmt = |t: DType| match t {
            DType::F16 => Fp::F16,
            DType::Bf16 => Fp::Bf16,
            _ => Fp::F32,
        };
        let formats = (fmt(self.a_type), fmt(self.b_type), Fp::F32);
        let specials = if self.a_type.is_quantized() && b_rows.iter().all(|x| x.is_finite()) {
            // Only A's rows with a NaN or ±∞ (a raw block's scale) can make an output special:
            // those alone are decoded (the huge-M rows' A is hundreds of MB as f64).
            match tolerance::rows_with_specials(&a) {
                Ok(rows) => tolerance::mul_mat_specials_sparse(
                    &rows, &b_rows, self.k, self.m, &columns, formats, false,
                ),
                Err(e) => return Outcome::Error(e.to_string()),
            }
        } else {
            let a_rows = match a.rows() {
                Ok(r) => r,
                Err(e) => return Outcome::Error(e.to_string()),
            };
            // Float A: its operands are the stored values, which may be flushed.
            if !self.a_type.is_quantized() {
                let flush = tolerance::mul_mat_flushable(
                    &a_rows,
                    &b_rows,
                    self.k,
                    self.m,
                    &columns,
                    (formats.0, formats.1),
                );
                for (b, f) in bounds.iter_mut().zip(flush) {
                    *b += f;
                }
            }
            tolerance::mul_mat_specials(
                &a_rows,
                &b_rows,
                self.k,
                self.m,
                &columns,
                formats,
                !self.a_type.is_quantized(),
            )
        };
        tolerance::apply_specials(&specials, &mut expected, &mut bounds);
        // The f32 sums may overflow in some order where Σ|a·b|, grown by the roundings of its
        // depth, reaches f32's range: ±∞ there is legitimate.
        let depth = crate::model::cases::mul_mat_vec::bounds::mul_mat_vec_depth_of(self.a_type, self.k, block_size);
        for (b, m) in bounds.iter_mut().zip(&magnitude.values) {
            if m * (1.0 + tolerance::gamma(depth)) >= f32::MAX as f64 {
                *b = f64::NAN;
            }
        }
        // ggml's integer-dot mat-vec (MMVQ), where the host may take it: B quantized to q8_1.
        // The two models apart, to say which one a result fits (the op alone: an epilogue
        // changes both).
        let mut apart = None;
        if let Some(plan) = self.int_dot_plan(ctx) {
            match super::intdot::mat_candidate(&a, &b_rows, &columns, plan) {
                Ok(c) => {
                    if self.epilogue.is_none() {
                        apart = Some((expected.clone(), bounds.clone(), c.clone()));
                    }
                    super::intdot::join_candidate(&mut expected, &mut bounds, &c)
                }
                Err(e) => return Outcome::Error(e.to_string()),
            }
        }
        // The nodes after the MUL_MAT, composed element by element (epilogue.rs): a bias [M]
        // broadcast over the columns, a residual of dst's shape.
        let addends = self.addends();
        for t in &addends {
            let values = match t.rows() {
                Ok(v) => v,
                Err(e) => return Outcome::Error(e.to_string()),
            };
            for (i, (x, bound)) in expected.iter_mut().zip(bounds.iter_mut()).enumerate() {
                (*x, *bound) = epilogue::add(*x, *bound, values[i % values.len()] as f32);
            }
        }
        let head = GraphOp::MulMat {
            a: &a,
            b: &b,
            prec_f32: false,
        };
        let tail: Vec<Tail> = addends.iter().map(Tail::Add).collect();
        let op = if tail.is_empty() {
            head
        } else {
            GraphOp::Fused {
                head: &head,
                tail: &tail,
                unfused: false,
            }
        };
        let judge = |run: &vkdiff_gpu::runners::KernelRun| {
            epilogue::verdict(run, &expected, &bounds, |i| want.index_of(i), apart.as_ref())
        };
        let mut own = |gpu: &mut _, tree: &mut _| runners::mul_mat_vec::run(gpu, tree, &a, &b);
        epilogue::run_and_judge(ctx, want.ne, &op, &mut own, judge)
    }

    fn axes(&self) -> [&'static str; 4] {
        ["rows", "columns", "batches", "batches3"]
    }

    fn facts(&self) -> Vec<String> {
        let mut f = vec![
            k_fact(self.k, self.a_type.block_len()),
            k_size(self.k).into(),
            rows(self.m),
            format!("N {}", bucket(self.n)),
        ];
        if self.ne02 * self.r2 * self.ne03 > 1 {
            f.push("batches".into());
        }
        if !self.epilogue.is_none() {
            f.push(format!("graph mul_mat{}", self.epilogue.suffix()));
        }
        if self.b_row_pad > 0 {
            f.push("padded B rows".into());
        }
        match self.a_layout {
            ALayout::Dense => {}
            ALayout::RowPad(_) => f.push("A rows padded".into()),
            ALayout::Permuted => f.push("A and B permuted 0213".into()),
        }
        f
    }

    fn dims(&self) -> Vec<(&'static str, usize)> {
        vec![("K", self.k), ("M", self.m), ("N", self.n)]
    }

    fn work(&self) -> Option<Work> {
        let batches = (self.ne02 * self.r2 * self.ne03) as f64;
        let a = (self.a_type.row_bytes(self.k).ok()? * self.m * self.ne02 * self.ne03) as f64;
        let b = (self.b_type.row_bytes(self.k).ok()? * self.n) as f64 * batches;
        let d = (4 * self.m * self.n) as f64 * batches;
        Some(Work {
            bytes: a + b + d,
            flops: 2.0 * (self.k * self.m * self.n) as f64 * batches,
        })
    }
}

impl MulMatVecCase {
    /// The integer-dot candidate of this case, where a ggml host may take MMVQ: a real host
    /// (vkdiff's own runners never quantize B), a device with integer-dot acceleration, an A
    /// type with an MMVQ body, and B f32 and contiguous (ggml's conditions for quantizing B).
    fn int_dot_plan(&self, ctx: &Ctx) -> Option<super::intdot::IntDotPlan> {
        use super::intdot::{int_dot_types, IntDotPath, IntDotPlan};
        let usable = ctx.latitude().later_host
            && self.a_layout.is_dense()
            && ctx.caps().integer_dot
            && self.b_type == DType::F32
            && self.b_row_pad == 0
            && int_dot_types(IntDotPath::Mmvq).contains(&self.a_type);
        usable.then(|| IntDotPlan::mmvq(self.a_type, self.k, ctx.caps().subgroup_size))
    }

    /// The second sources of the epilogue's ADD nodes, in graph order: the bias [M] (stream 3)
    /// and the residual of dst's shape (stream 4), f32 from B's distribution.
    pub fn addends(&self) -> Vec<Tensor> {
        let ne = [self.m, self.n, self.ne02 * self.r2, self.ne03];
        let shapes: &[[usize; 4]] = match self.epilogue {
            Epilogue::None => &[],
            Epilogue::Add => &[[self.m, 1, 1, 1]],
            Epilogue::AddAdd => &[[self.m, 1, 1, 1], ne],
        };
        shapes
            .iter()
            .zip(3..)
            .map(|(&ne, stream)| {
                tensor(DType::F32, ne, Blocks::Quantized(self.b_dist), self.seed, stream)
            })
            .collect()
    }


    /// A and B, regenerated from the seed. B's rows are `b_row_pad` elements apart beyond K.
    pub fn inputs(&self) -> Result<(Tensor, Tensor), String> {
        let ne12 = self.ne02 * self.r2;
        let (k, m, ne02, ne03) = (self.k, self.m, self.ne02, self.ne03);
        let a = match self.a_layout {
            ALayout::Dense => tensor(self.a_type, [k, m, ne02, ne03], self.a_blocks, self.seed, 0),
            ALayout::RowPad(pad) => {
                let dense =
                    tensor(self.a_type, [k + pad, m, ne02, ne03], self.a_blocks, self.seed, 0);
                let ne = [k, m, ne02, ne03];
                Tensor::new(self.a_type, ne, dense.nb(), dense.into_data())
                    .map_err(|e| e.to_string())?
            }
            ALayout::Permuted => {
                let dense = tensor(self.a_type, [k, ne02, m, ne03], self.a_blocks, self.seed, 0);
                let nb = dense.nb();
                let ne = [k, m, ne02, ne03];
                Tensor::new(self.a_type, ne, [nb[0], nb[2], nb[1], nb[3]], dense.into_data())
                    .map_err(|e| e.to_string())?
            }
        };
        if self.a_layout == ALayout::Permuted {
            // B as the permuted query: stored (K, ne12), viewed (K, 1, ne12) with nb1 > nb2.
            let dense = tensor(self.b_type, [k, ne12, 1, ne03], Blocks::Quantized(self.b_dist), self.seed, 1);
            let nb = dense.nb();
            let ne = [k, 1, ne12, ne03];
            let b = Tensor::new(self.b_type, ne, [nb[0], nb[2], nb[1], nb[3]], dense.into_data())
                .map_err(|e| e.to_string())?;
            return Ok((a, b));
        }
        let b_dense = tensor(
            self.b_type,
            [self.k + self.b_row_pad, self.n, ne12, self.ne03],
            Blocks::Quantized(self.b_dist),
            self.seed,
            1,
        );
        // View the first K elements of each padded row (a ggml view with nb1 > ne0·nb0).
        let b = Tensor::new(
            self.b_type,
            [self.k, self.n, ne12, self.ne03],
            b_dense.nb(),
            b_dense.data().to_vec(),
        )
        .map_err(|e| e.to_string())?;
        Ok((a, b))
    }

}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use tolerance::Special;

    #[test]
    fn the_strategy_draws_nan_and_infinities_that_are_judged() {
        // Over the suite's 200 cases of a float row: outputs whose NaN or ±∞ every order of
        // the kernel's arithmetic shares (judged exactly), and ones left undefined.
        let mut runner = TestRunner::deterministic();
        let s = strategy(DType::F32, DType::F32);
        let (mut nan, mut inf, mut undefined, mut subnormal) = (0, 0, 0, 0);
        for _ in 0..200 {
            let c = s.new_tree(&mut runner).unwrap().current();
            let (a, b) = c.inputs().unwrap();
            let (ar, br) = (a.rows().unwrap(), b.rows().unwrap());
            subnormal += ar
                .iter()
                .chain(&br)
                .filter(|x| **x != 0.0 && x.abs() < f32::MIN_POSITIVE as f64)
                .count();
            let ne12 = c.ne02 * c.r2;
            let columns: Vec<(usize, usize)> = (0..c.n * ne12 * c.ne03)
                .map(|col| {
                    let (i2, i3) = ((col / c.n) % ne12, col / (c.n * ne12));
                    ((i3 * c.ne02 + i2 / c.r2) * c.m, col)
                })
                .collect();
            let f = (Fp::F32, Fp::F32, Fp::F32);
            for sp in tolerance::mul_mat_specials(&ar, &br, c.k, c.m, &columns, f, true) {
                match sp {
                    Special::Nan => nan += 1,
                    Special::Inf(_) => inf += 1,
                    Special::Undefined => undefined += 1,
                    Special::Finite => {}
                }
            }
        }
        let counts =
            format!("{nan} NaN, {inf} ±∞, {undefined} undefined, {subnormal} subnormal inputs");
        println!("{counts}");
        assert!(nan > 0 && inf > 0 && subnormal > 0, "{counts}");
    }

    /// The view cases reach ggml's routes as its host tests them (0.1.161's
    /// `ggml_vk_mul_mat`): p021 wants A and B permuted 0213 (nb0 ≤ nb2 ≤ nb1 ≤ nb3, nb1 > nb2),
    /// nc a non-contiguous A that is not permuted; and the reference reads the views as dense
    /// copies of the same values.
    #[test]
    fn view_cases_take_ggml_s_view_routes_and_the_reference_reads_them() {
        let mut runner = TestRunner::deterministic();
        let permuted = |nb: [usize; 4]| nb[0] <= nb[2] && nb[2] < nb[1] && nb[1] <= nb[3];
        for layout in [ALayout::RowPad(1), ALayout::Permuted] {
            for _ in 0..20 {
                let c = view_strategy(layout).new_tree(&mut runner).unwrap().current();
                c.validate().unwrap();
                assert_eq!(c.variant(), layout.variant().unwrap());
                let (a, b) = c.inputs().unwrap();
                assert!(!a.is_contiguous(), "{c}");
                if layout == ALayout::Permuted {
                    assert!(permuted(a.nb()) && permuted(b.nb()), "{c}");
                } else {
                    assert!(a.nb()[1] <= a.nb()[2], "{c}");
                }
                let want = mul_mat::mul_mat(&a, &b).unwrap();
                let dense = mul_mat::mul_mat(&a.to_contiguous(), &b.to_contiguous()).unwrap();
                assert_eq!(
                    want.values.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    dense.values.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                );
            }
        }
    }
}
