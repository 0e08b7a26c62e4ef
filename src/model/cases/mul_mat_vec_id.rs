//! MUL_MAT_ID cases that upstream routes to the matrix-vector ID kernel: one token (ids.ne1 = 1)
//! whose n_used expert slots each multiply one expert matrix by one b row (interface.md §4.2,
//! §4.3).
//!
//! Ids are generated inside [0, n_as): ggml accepts any i32 there (ids are data, not shape), but
//! an id outside the experts has no defined result (the mat-vec kernel reads whatever memory it
//! points at), so there is nothing to compare against; the reference rejects such ids.

use std::fmt;

use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};
use vkdiff_gpu::runners;
use vkdiff_reference::ops::mul_mat_id;
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::data::{rng, tensor, Blocks, Dist};
use super::{CaseModel, Outcome};
use crate::model::driver::{Ctx, GraphOp, Tail};
use super::mul_mat_vec::epilogue;
use crate::model::work::BenchShapes;
use crate::model::work::Work;
use crate::model::facts::{bucket, k_fact, k_size, repeated_expert, repeated_forced, rows, REPEATED_FACT};
use crate::model::kernels::KernelDef;

/// Expert types the mat-vec ID kernel takes: the mat-vec A types except bf16, which upstream
/// routes to the matrix-matrix ID kernel even for one token (interface.md §4.3; its
/// `mul_mat_vec_id_bf16_f32` is compiled but never selected).
pub fn a_types() -> impl Iterator<Item = DType> {
    super::mul_mat_vec::a_types().filter(|&a| a != DType::Bf16)
}

/// How the token's expert slots pick experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Every slot to the last expert (the matrix furthest from offset 0).
    AllToOne,
    /// A random permutation of the experts, cycled when n_used > n_as: distinct experts as
    /// top-k routing picks them, so with n_as > n_used some experts are unused.
    Distinct,
    /// Each slot independently uniform: repeated ids and unused experts at random.
    Random,
    /// Slots in pairs share an expert (ids[2j] = ids[2j + 1]): one expert read for two
    /// different b rows when ne11 = n_used.
    Repeated,
}

impl Routing {
    /// Simplest first.
    pub fn strategy() -> impl Strategy<Value = Routing> {
        prop_oneof![
            Just(Routing::AllToOne),
            Just(Routing::Distinct),
            Just(Routing::Random),
            Just(Routing::Repeated)
        ]
    }
}

/// One MUL_MAT_ID through the mat-vec ID kernel: dst (M, n_used, 1, 1) from experts
/// as (K, M, n_as, 1), b (K, ne11, 1, 1) f32 and ids (n_used, 1) i32.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MulMatVecIdCase {
    /// The experts' type.
    pub a_type: DType,
    /// Inner dimension (ne00 = ne10).
    pub k: usize,
    /// Rows of each expert = dst.ne0.
    pub m: usize,
    /// Experts (as.ne2).
    pub n_as: usize,
    /// Expert slots of the token (ids.ne0 = dst.ne1).
    pub n_used: usize,
    /// b rows of the token (b.ne1), a divisor of n_used: slot e reads row e mod ne11.
    pub ne11: usize,
    /// How ids are drawn.
    pub routing: Routing,
    /// Extra elements between b's rows (0: contiguous). The host copies b to contiguous first.
    pub b_row_pad: usize,
    /// The experts' data.
    pub a_blocks: Blocks,
    /// b's data.
    pub b_dist: Dist,
    /// Data seed (experts, b and ids are regenerated from it).
    pub seed: u64,
    /// The nodes the graph puts after the MUL_MAT_ID (none: the op alone).
    #[serde(default, skip_serializing_if = "IdEpilogue::is_none")]
    pub epilogue: IdEpilogue,
}

/// The element-wise nodes after the MUL_MAT_ID in a mixture-of-experts decode graph, which
/// ggml's Vulkan host fuses into the mat-vec ID dispatch where fusion is on
/// (`mul_mat_vec/epilogue.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdEpilogue {
    /// The MUL_MAT_ID alone.
    #[default]
    None,
    /// `ggml_mul(mm, weights)`, the router's weights [1, n_used, 1] scaling each slot.
    Mul,
    /// `ggml_add_id(mm, bias, ids)`: each slot's expert's bias row of bias [M, n_as] (gpt-oss).
    AddId,
    /// ADD_ID, then MUL by the weights.
    AddIdMul,
}

impl IdEpilogue {
    /// No nodes after the MUL_MAT_ID.
    pub fn is_none(&self) -> bool {
        *self == IdEpilogue::None
    }

    /// The suffix of the variant name: `+mul`, `+add_id`, `+add_id+mul`.
    pub fn suffix(self) -> &'static str {
        match self {
            IdEpilogue::None => "",
            IdEpilogue::Mul => "+mul",
            IdEpilogue::AddId => "+add_id",
            IdEpilogue::AddIdMul => "+add_id+mul",
        }
    }
}

/// The single-token MUL_MAT_ID kernel (registry line in `src/model/cases/mod.rs`).
pub struct MulMatVecId;

impl KernelDef for MulMatVecId {
    type Case = MulMatVecIdCase;
    type Params = (DType, IdEpilogue);
    const NAME: &'static str = "mul_mat_vec_id";
    const SHADER: &'static str = "mul_mat_vec.comp";
    const SUMMARY: &'static str = "single-token MUL_MAT_ID (mixture of experts) through the mat-vec kernel, B f32";
    const ERROR_MODEL: &'static str = "the mat-vec model of the experts' type, per expert slot (src/model/cases/mul_mat_vec/bounds.rs); +mul/+add_id: one f32 rounding per node (src/model/cases/mul_mat_vec/epilogue.rs)";

    fn variants() -> Vec<(String, Self::Params)> {
        let mut v: Vec<_> = a_types()
            .map(|a| (runners::mul_mat_vec_id::variant(a).name, (a, IdEpilogue::None)))
            .collect();
        for e in [IdEpilogue::Mul, IdEpilogue::AddId, IdEpilogue::AddIdMul] {
            for a in super::mul_mat_vec::FUSED_TYPES {
                v.push((runners::mul_mat_vec_id::variant(a).name + e.suffix(), (a, e)));
            }
        }
        v
    }

    fn strategy(p: &Self::Params) -> BoxedStrategy<Self::Case> {
        let epilogue = p.1;
        strategy(p.0)
            .prop_map(move |c| MulMatVecIdCase { epilogue, ..c })
            .boxed()
    }

    const BENCH_ORDER: u8 = 2;
    /// One decode token of a Qwen3-30B-A3B-like MoE layer (128 experts, 8 used).
    fn bench_rows(shapes: &BenchShapes) -> Vec<(String, Self::Case)> {
        let weights = Blocks::Quantized(Dist::Normal);
        let mut rows = Vec::new();
        let mut push = |label: String, case| rows.push((label, case));
        // MoE layers of a Qwen3-30B-A3B-like model: 128 experts, 8 used per token, expert FFN 768
        // wide over hidden 2048 (gate/up: 768×2048, down: 2048×768).
        for a_type in [DType::F16, DType::Q4_0, DType::Q8_0, DType::Q4_K] {
            for (m, k) in [(768, 2048), (2048, 768)] {
                let (m, k) = (shapes.dim(m), shapes.dim(k));
                let case = MulMatVecIdCase {
                    a_type,
                    k,
                    m,
                    n_as: 128,
                    n_used: 8,
                    ne11: 1,
                    routing: Routing::Distinct,
                    b_row_pad: 0,
                    a_blocks: weights,
                    b_dist: Dist::Normal,
                    seed: 1,
                    epilogue: IdEpilogue::None,
                };
                push(
                    format!("MoE 128×{m}×{k} {a_type}, 8 used"),
                    case,
                );
            }
        }
        rows
    }
}

/// Elements of the experts tensor a case may have (4M: generating and decoding them dominates
/// a case's time): large K·M shapes get fewer experts, down to one for the largest.
const EXPERT_ELEMENTS: usize = 1 << 22;

/// Products a·b a case may compute (K·M·n_used): many slots over a long K get fewer rows
/// (lavapipe runs the K-quant bodies at about 0.2 G products/s).
const PRODUCTS: usize = 1 << 26;

/// Sizes around every block and workgroup edge, small first. n_used is 1..8 as in real models,
/// sometimes up to 64, rarely at Vulkan's limit of 4096 slots; rare huge M exercises the
/// 64-slice z dispatch.
pub fn strategy(a: DType) -> impl Strategy<Value = MulMatVecIdCase> {
    let block = a.block_len();
    let k = if block > 1 {
        // Past 4096 now and then for every block size (ggml's hosts change paths there).
        let most_blocks = if block >= 256 { 130 } else { 160 };
        prop_oneof![4 => 1usize..=4, 3 => 5usize..=16, 1 => 17usize..=most_blocks]
            .prop_map(move |n| n * block)
            .boxed()
    } else {
        prop_oneof![4 => 1usize..=64, 3 => 65usize..=520, 1 => 521usize..=5000].boxed()
    };
    let m = prop_oneof![40 => 1usize..=16, 30 => 17usize..=130, 10 => 131usize..=700, 1 => 65530usize..=66000];
    let n_as = prop_oneof![4 => 1usize..=8, 3 => 9usize..=64, 1 => 65usize..=160];
    let n_used = prop_oneof![20 => 1usize..=8, 4 => 9usize..=64, 1 => 4090usize..=4096];
    // ne11: 1 (shared row), n_used (a row per slot), or another divisor of n_used (picked by
    // index below).
    let ne11 = prop_oneof![Just(0usize), Just(1usize), 2usize..64];
    let pad = prop_oneof![3 => Just(0usize), 1 => 1usize..=5];
    // Order matters for shrinking: proptest shrinks a tuple's elements in order without
    // revisiting them, so the routing and the data distributions settle on the simplest arms
    // that still fail (AllToOne…, Quantized(Normal), Normal: few exact zeros to hide a wrong
    // expert) before the sizes shrink under them; the seed comes last.
    (
        Routing::strategy(),
        Blocks::strategy(),
        Dist::strategy(),
        (k, m, n_as, n_used, ne11),
        pad,
        any::<u64>(),
    )
        .prop_map(
            move |(routing, a_blocks, b_dist, (k, m, n_as, n_used, ne11), b_row_pad, seed)| {
                // Keep the expensive corners cheap: huge M or thousands of slots with a
                // short K, few experts, and few rows.
                let (k, n_as) = if m > 60000 {
                    (k.min(32.max(block)), n_as.min(2))
                } else {
                    (k, n_as)
                };
                let n_used = if m > 60000 { n_used.min(2) } else { n_used };
                let (k, m) = if n_used > 64 {
                    (k.min(64.max(block)), m.min(8))
                } else {
                    (k, m)
                };
                let m = if m <= 60000 {
                    m.min((PRODUCTS / (k * n_used)).max(1))
                } else {
                    m
                };
                // Huge M may take 4× the budget, so that a z-dispatched case with K = 32 still
                // has two experts to tell apart (256-element super-blocks keep one).
                let budget = if m > 60000 { 4 } else { 1 } * EXPERT_ELEMENTS;
                let n_as = n_as.min((budget / (k * m)).max(1));
                let divisors: Vec<usize> = (1..=n_used).filter(|d| n_used % d == 0).collect();
                let ne11 = match ne11 {
                    0 => 1,
                    1 => n_used,
                    i => divisors[i % divisors.len()],
                };
                MulMatVecIdCase {
                    a_type: a,
                    k,
                    m,
                    n_as,
                    n_used,
                    ne11,
                    routing,
                    b_row_pad,
                    a_blocks,
                    b_dist,
                    seed,
                    epilogue: IdEpilogue::None,
                }
            },
        )
}

impl fmt::Display for MulMatVecIdCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}×f32 K={} M={} experts {} slots {} ne11 {} routing {:?} pad {} A {:?} B {:?} seed {}{}",
            self.a_type,
            self.k,
            self.m,
            self.n_as,
            self.n_used,
            self.ne11,
            self.routing,
            self.b_row_pad,
            self.a_blocks,
            self.b_dist,
            self.seed,
            match self.epilogue {
                IdEpilogue::None => String::new(),
                e => format!(" graph {}", &e.suffix()[1..]),
            }
        )
    }
}

impl CaseModel for MulMatVecIdCase {
    fn variant(&self) -> String {
        runners::mul_mat_vec_id::variant(self.a_type).name + self.epilogue.suffix()
    }

    fn validate(&self) -> Result<(), String> {
        if !a_types().any(|a| a == self.a_type) {
            return Err(format!("mat-vec ID experts may not be {}", self.a_type));
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
            "experts",
            &[("K", self.k), ("M", self.m), ("n_as", self.n_as)],
        )?;
        super::check_sizes(
            "b",
            &[
                ("K + pad", self.k.saturating_add(self.b_row_pad)),
                ("ne11", self.ne11),
            ],
        )?;
        super::check_sizes("dst", &[("M", self.m), ("n_used", self.n_used)])?;
        if self.n_used % self.ne11 != 0 {
            return Err(format!(
                "ne11 = {} does not divide n_used = {} (ggml_mul_mat_id)",
                self.ne11, self.n_used
            ));
        }
        Ok(())
    }

    fn evaluate(&self, ctx: &mut Ctx) -> Outcome {
        if let Some(reason) = ctx.driver.fused_skip().filter(|_| !self.epilogue.is_none()) {
            return Outcome::Skip(reason);
        }
        if let Some(skip) = super::later_type_skip(ctx, self.a_type) {
            return skip;
        }
        let (a, b, ids) = match self.inputs() {
            Ok(x) => x,
            Err(e) => return Outcome::Skip(format!("invalid case: {e}")),
        };
        if let Err(reason) = runners::mul_mat_vec_id::precondition(&a, &b, &ids) {
            return Outcome::Skip(format!("precondition: {reason}"));
        }
        let (want, magnitude) = match (
            mul_mat_id::mul_mat_id(&a, &b, &ids),
            mul_mat_id::mul_mat_id_magnitude(&a, &b, &ids),
        ) {
            (Ok(w), Ok(m)) => (w, m),
            (Err(e), _) | (_, Err(e)) => {
                return Outcome::Skip(format!("ggml rejects the inputs: {e}"))
            }
        };
        let block_size = runners::mul_mat_vec_id::spec_constants(ctx.caps(), self.a_type)[0];
        let mut bounds =
            crate::model::cases::mul_mat_vec::bounds::mul_mat_vec_id_bounds(&magnitude.values, self.k, block_size, self.a_type);
        // dst column (slot e) multiplies expert ids[e] by B row e mod ne11.
        let columns: Vec<(usize, usize)> = self
            .ids()
            .iter()
            .enumerate()
            .map(|(e, &x)| (x as usize * self.m, e % self.ne11))
            .collect();
        if self.a_type == DType::Mxfp4 {
            let b_rows = match b.rows() {
                Ok(r) => r,
                Err(e) => return Outcome::Error(e.to_string()),
            };
            if let Err(e) = super::mxfp4::add_mat_vec_terms(
                &mut bounds, &a, &b_rows, self.k, self.m, &columns,
            ) {
                return Outcome::Error(e);
            }
        }
        // Block scales of any bits (NaN, ±∞) reach dst by kernel-dependent factoring.
        crate::model::compare::undefined_where_non_finite(&want.values, &mut bounds);
        // The f32 sums may overflow in some order where Σ|a·b|, grown by the roundings of its
        // depth, reaches f32's range (MXFP4's scales reach 2¹²⁷): ±∞ there is legitimate.
        let depth = crate::model::cases::mul_mat_vec::bounds::mul_mat_vec_depth_of(
            self.a_type,
            self.k,
            block_size,
        );
        for (b, m) in bounds.iter_mut().zip(&magnitude.values) {
            if m * (1.0 + crate::model::tolerance::gamma(depth)) >= f32::MAX as f64 {
                *b = f64::NAN;
            }
        }
        let mut expected = want.values.clone();
        // ggml's integer-dot mat-vec (MMVQ), where the host may take it: B quantized to q8_1.
        // The two models apart, to say which one a result fits (the op alone).
        let mut apart = None;
        if let Some(plan) = self.int_dot_plan(ctx) {
            let b_rows = match b.rows() {
                Ok(r) => r,
                Err(e) => return Outcome::Error(e.to_string()),
            };
            // Slot e multiplies expert ids[e] with b's row e mod ne11.
            let columns: Vec<(usize, usize)> = self
                .ids()
                .iter()
                .enumerate()
                .map(|(e, &id)| (id as usize * self.m, e % self.ne11))
                .collect();
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
        // The nodes after the MUL_MAT_ID, composed element by element (epilogue.rs): slot e's
        // outputs get its expert's bias row, then its router weight.
        let (bias, weights) = self.epilogue_tensors();
        let ids_of = self.ids();
        let m = self.m;
        if let Some(t) = &bias {
            let values = match t.rows() {
                Ok(v) => v,
                Err(e) => return Outcome::Error(e.to_string()),
            };
            for (i, (x, bound)) in expected.iter_mut().zip(bounds.iter_mut()).enumerate() {
                let expert = ids_of[i / m] as usize;
                (*x, *bound) = epilogue::add(*x, *bound, values[expert * m + i % m] as f32);
            }
        }
        if let Some(t) = &weights {
            let values = match t.rows() {
                Ok(v) => v,
                Err(e) => return Outcome::Error(e.to_string()),
            };
            for (i, (x, bound)) in expected.iter_mut().zip(bounds.iter_mut()).enumerate() {
                (*x, *bound) = epilogue::mul(*x, *bound, values[i / m] as f32);
            }
        }
        let head = GraphOp::MulMatId {
            a: &a,
            b: &b,
            ids: &ids,
            prec_f32: false,
        };
        let tail: Vec<Tail> = bias
            .iter()
            .map(Tail::AddId)
            .chain(weights.iter().map(Tail::Mul))
            .collect();
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
        let mut own =
            |gpu: &mut _, tree: &mut _| runners::mul_mat_vec_id::run(gpu, tree, &a, &b, &ids);
        epilogue::run_and_judge(ctx, want.ne, &op, &mut own, judge)
    }

    fn unreal_inputs(&self) -> Vec<String> {
        repeated_forced(&self.ids(), self.n_used)
    }

    fn axes(&self) -> [&'static str; 4] {
        ["rows", "slots", "tokens", "i3"]
    }

    fn facts(&self) -> Vec<String> {
        let mut f = vec![
            k_fact(self.k, self.a_type.block_len()),
            k_size(self.k).into(),
            rows(self.m),
            format!("slots {}", bucket(self.n_used)),
        ];
        if repeated_expert(&self.ids(), self.n_used) {
            f.push(REPEATED_FACT.into());
        }
        if self.b_row_pad > 0 {
            f.push("padded B rows".into());
        }
        if !self.epilogue.is_none() {
            f.push(format!("graph mul_mat_id{}", self.epilogue.suffix()));
        }
        f
    }

    fn cause(&self, facts: &mut Vec<String>) {
        if repeated_expert(&self.ids(), self.n_used) {
            facts.push(REPEATED_FACT.into());
        }
    }

    fn dims(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("K", self.k),
            ("M", self.m),
            ("experts", self.n_as),
            ("slots", self.n_used),
        ]
    }

    fn work(&self) -> Option<Work> {
        // The experts a token uses (each read once), its activation, its outputs.
        let a = (self.a_type.row_bytes(self.k).ok()? * self.m * self.n_used) as f64;
        Some(Work {
            bytes: a + (4 * self.k * self.ne11 + 4 * self.m * self.n_used) as f64,
            flops: 2.0 * (self.k * self.m * self.n_used) as f64,
        })
    }
}

impl MulMatVecIdCase {
    /// The integer-dot candidate of this case, where a ggml host may take MMVQ: a real host,
    /// a device with integer-dot acceleration, an A type with an MMVQ body and b contiguous
    /// (ggml's conditions for quantizing b; b is f32).
    fn int_dot_plan(&self, ctx: &Ctx) -> Option<super::intdot::IntDotPlan> {
        use super::intdot::{int_dot_types, IntDotPath, IntDotPlan};
        let usable = ctx.latitude().later_host
            && ctx.caps().integer_dot
            && self.b_row_pad == 0
            && int_dot_types(IntDotPath::Mmvq).contains(&self.a_type);
        usable.then(|| IntDotPlan::mmvq(self.a_type, self.k, ctx.caps().subgroup_size))
    }

    /// The epilogue's tensors, f32 from b's distribution: ADD_ID's per-expert bias
    /// [M, n_as] (stream 3) and MUL's router weights [1, n_used, 1, 1] (stream 4).
    pub fn epilogue_tensors(&self) -> (Option<Tensor>, Option<Tensor>) {
        let blocks = Blocks::Quantized(self.b_dist);
        let make = |ne, stream| tensor(DType::F32, ne, blocks, self.seed, stream);
        let bias = matches!(self.epilogue, IdEpilogue::AddId | IdEpilogue::AddIdMul)
            .then(|| make([self.m, self.n_as, 1, 1], 3));
        let weights = matches!(self.epilogue, IdEpilogue::Mul | IdEpilogue::AddIdMul)
            .then(|| make([1, self.n_used, 1, 1], 4));
        (bias, weights)
    }


    /// The token's expert ids, each in [0, n_as), from the seed's ids stream.
    pub fn ids(&self) -> Vec<i32> {
        let mut r = rng(self.seed, 2);
        let n = self.n_as;
        let ids: Vec<usize> = match self.routing {
            Routing::AllToOne => vec![n - 1; self.n_used],
            Routing::Distinct => {
                let mut perm: Vec<usize> = (0..n).collect();
                perm.shuffle(&mut r);
                (0..self.n_used).map(|e| perm[e % n]).collect()
            }
            Routing::Random => (0..self.n_used).map(|_| r.gen_range(0..n)).collect(),
            Routing::Repeated => {
                let pairs: Vec<usize> = (0..self.n_used.div_ceil(2))
                    .map(|_| r.gen_range(0..n))
                    .collect();
                (0..self.n_used).map(|e| pairs[e / 2]).collect()
            }
        };
        ids.into_iter().map(|x| x as i32).collect()
    }

    /// The experts, b and ids, regenerated from the seed. b's rows are `b_row_pad` elements
    /// apart beyond K.
    pub fn inputs(&self) -> Result<(Tensor, Tensor, Tensor), String> {
        let experts = tensor(
            self.a_type,
            [self.k, self.m, self.n_as, 1],
            self.a_blocks,
            self.seed,
            0,
        );
        let b_dense = tensor(
            DType::F32,
            [self.k + self.b_row_pad, self.ne11, 1, 1],
            Blocks::Quantized(self.b_dist),
            self.seed,
            1,
        );
        // View the first K elements of each padded row (a ggml view with nb1 > ne0·nb0).
        let b = Tensor::new(
            DType::F32,
            [self.k, self.ne11, 1, 1],
            b_dense.nb(),
            b_dense.data().to_vec(),
        )
        .map_err(|e| e.to_string())?;
        let ids_bytes = self.ids().iter().flat_map(|x| x.to_le_bytes()).collect();
        let ids = Tensor::from_bytes(DType::I32, [self.n_used, 1, 1, 1], ids_bytes)
            .map_err(|e| e.to_string())?;
        Ok((experts, b, ids))
    }

}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(routing: Routing, n_as: usize, n_used: usize) -> MulMatVecIdCase {
        MulMatVecIdCase {
            a_type: DType::F32,
            k: 4,
            m: 3,
            n_as,
            n_used,
            ne11: 1,
            routing,
            b_row_pad: 0,
            a_blocks: Blocks::Quantized(Dist::Normal),
            b_dist: Dist::Normal,
            seed: 9,
            epilogue: IdEpilogue::None,
        }
    }

    #[test]
    fn routings_draw_what_they_promise() {
        assert_eq!(case(Routing::AllToOne, 5, 3).ids(), vec![4, 4, 4]);
        let d = case(Routing::Distinct, 8, 5).ids();
        let mut s = d.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 5, "distinct: {d:?}");
        // Cycled when there are fewer experts than slots.
        let c = case(Routing::Distinct, 2, 5).ids();
        assert_eq!((c[0], c[1]), (c[2], c[3]), "{c:?}");
        let r = case(Routing::Repeated, 50, 5).ids();
        assert_eq!((r[0], r[2]), (r[1], r[3]), "{r:?}");
        for routing in [Routing::Random, Routing::Repeated, Routing::Distinct] {
            assert!(case(routing, 3, 40)
                .ids()
                .iter()
                .all(|&x| (0..3).contains(&x)));
        }
    }

    #[test]
    fn strategy_keeps_ne11_a_divisor_and_ids_in_range() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        for _ in 0..300 {
            let c = strategy(DType::Q4_0)
                .new_tree(&mut runner)
                .unwrap()
                .current();
            assert_eq!(c.validate(), Ok(()), "{c}");
            assert_eq!(c.n_used % c.ne11, 0);
            assert!(c.k * c.m * c.n_as <= (4 * EXPERT_ELEMENTS).max(c.k * c.m));
            let (a, b, ids) = c.inputs().unwrap();
            assert!(mul_mat_id::check(&a, &b, &ids).is_ok());
            assert!(mul_mat_id::expert_ids(&a, &ids).is_ok());
        }
    }
}
