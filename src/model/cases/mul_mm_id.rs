//! MUL_MAT_ID cases that upstream routes to the matrix-matrix ID kernel (`mul_mm.comp` with
//! MUL_MAT_ID=1): two or more tokens (one for bf16 experts, which have no mat-vec ID path),
//! §4.3 and §8.5.
//!
//! One row per pipeline family on a scalar fp16 device, named by its unaligned SPIR-V and
//! covering the `_aligned` twin (see `mul_mm.rs`). Quantized experts always get the f16
//! accumulator there (the precision request is ignored), so both requests are generated. The
//! same families are the `_cm1` rows (KHR coopmat, drawn alike); cm2 has its own (`_cm2`).
//!
//! What the strategy covers, simplest arm first: every token to one expert (with n_used > 1
//! that lists the expert several times per token: more matches than the dispatch has
//! columns, §8.5), distinct experts per token (unused experts when n_as > n_used), random ids
//! (repeats and unused experts), pairs of slots sharing an expert; n_used 1..8 as in real
//! models, up to 64, and hundreds with a few more tokens than one row-id chunk holds
//! (4096 / n_used tokens each); ne11 = 1, n_used or another divisor; M and K around the tile
//! edges; f16 and padded B where the host accepts them (only f16 experts take a non-f32 B:
//! the host asserts otherwise, §12 item 17).
//!
//! Ids are generated inside [0, n_as): an id outside has no defined result (see
//! `mul_mat_vec_id.rs`).
//!
//! § numbers: sections of docs/interface.md.

use std::fmt;

use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};
use vkdiff_gpu::runners;
use vkdiff_gpu::runners::mul_mm::{Mode, MulMmIdRun, Prec};
use vkdiff_reference::ops::mul_mat_id;
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::data::{rng, tensor, Blocks, Dist};
use super::mul_mat_vec_id::Routing;
use super::mul_mm::{
    all_families, arith_of, cm1_bounds, cm2_bounds, cm2_k_strategy, edge_strategy, family_name,
    inputs_for, judge_with, k_strategy, mode_of, mode_on, pad_strategy, QUANT_TYPES, b_tensor,
    gap_strategy, gap_words,
};
use super::{CaseModel, Outcome};
use crate::model::driver::{Ctx, GraphOp};
use crate::model::work::BenchShapes;
use crate::model::work::Work;
use crate::model::facts::{
    bucket, k_fact, mm_path, prec_fact, repeated_expert, repeated_forced, rows, B_GAPS_FACT,
    REPEATED_FACT,
};
use crate::model::config::Family as Shaders;
use crate::model::kernels::KernelDef;
use super::mul_mm::Family;
use vkdiff_gpu::DeviceCaps;

/// Products a case may compute (M·K·n_used·n_tokens).
const PRODUCTS: usize = 1 << 22;

/// Elements of the experts tensor a case may have.
const EXPERT_ELEMENTS: usize = 1 << 21;

/// One MUL_MAT_ID through the matrix-matrix kernel: dst (M, n_used, n_tokens, 1) from experts
/// (K, M, n_as, 1), b (K, ne11, n_tokens, 1) and ids (n_used, n_tokens).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MulMmIdCase {
    /// The experts' type.
    pub a_type: DType,
    /// b's type.
    pub b_type: DType,
    /// Inner dimension.
    pub k: usize,
    /// Rows of each expert = dst.ne0.
    pub m: usize,
    /// Experts.
    pub n_as: usize,
    /// Expert slots per token (ids.ne0).
    pub n_used: usize,
    /// b rows per token, a divisor of n_used: slot e reads row e mod ne11.
    pub ne11: usize,
    /// Tokens (ids.ne1).
    pub n_tokens: usize,
    /// How ids are drawn (per token).
    pub routing: Routing,
    /// Extra elements between b's rows.
    pub b_row_pad: usize,
    /// Extra elements after each token's rows of b (0: none; see `MulMmCase::b_batch_pad`):
    /// b stays dim01-contiguous but is not contiguous, so the hosts skip integer dot for it.
    #[serde(default)]
    pub b_batch_pad: usize,
    /// The precision request.
    pub prec: Prec,
    /// The experts' data.
    pub a_blocks: Blocks,
    /// b's data.
    pub b_dist: Dist,
    /// Data seed (experts, b and ids).
    pub seed: u64,
    /// The cm2 path (`mul_mm_cm2.comp`) instead of the scalar fp16 one.
    #[serde(default)]
    pub cm2: bool,
    /// The cm1 path (`mul_mm.comp` with COOPMAT) instead of the scalar fp16 one.
    #[serde(default)]
    pub cm1: bool,
}

/// The MUL_MAT_ID matrix-matrix kernel (registry line in `src/model/cases/mod.rs`).
pub struct MulMmId;

impl KernelDef for MulMmId {
    type Case = MulMmIdCase;
    type Params = Family;
    const NAME: &'static str = "mul_mm_id";
    const SHADER: &'static str = "mul_mm.comp";
    const SUMMARY: &'static str = "MUL_MAT_ID (mixture of experts) for several tokens through the matrix-matrix kernel, scalar fp16 path, KHR coopmat path (`_cm1` rows) and NV coopmat2 path (`_cm2` rows): experts f32/f16/bf16/quantized, row-id gathering, token chunks of 4096/n_used";
    const ERROR_MODEL: &'static str = "the mul_mm (scalar), mul_mm cm1 or mul_mm_cm2 (cm2) error bound per (slot, token) with its expert's rows (src/model/cases/mul_mm/bounds.rs, bounds_cm2.rs)";

    fn variants() -> Vec<(String, Family)> {
        all_families(true)
            .into_iter()
            .map(|(a, b, acc16, mode)| {
                let name = family_name(a, b, acc16, true, mode);
                (name, Family { a, b, acc16, mode })
            })
            .collect()
    }

    fn strategy(p: &Family) -> BoxedStrategy<Self::Case> {
        prop_oneof![
            super::mul_mm::LARGE_ODDS => strategy(p.a, p.b, p.acc16, p.mode),
            1 => large_strategy(p.a, p.b, p.acc16, p.mode),
        ]
        .boxed()
    }

    fn requires(p: &Family, caps: &DeviceCaps) -> Option<String> {
        super::mul_mm::requires(&host_slot(p), caps)
    }

    fn ggml_skip(p: &Family, family: Shaders) -> Option<String> {
        super::mul_mm::ggml_skip(&host_slot(p), family)
    }

    const BENCH_ORDER: u8 = 3;
    /// A 512-token prefill of a Qwen3-30B-A3B-like MoE layer (128 experts, 8 used), scalar and cm2.
    fn bench_rows(shapes: &BenchShapes) -> Vec<(String, Self::Case)> {
        let weights = Blocks::Quantized(Dist::Normal);
        let mut rows = Vec::new();
        let mut push = |label: String, case| rows.push((label, case));
        for cm2 in [false, true] {
            for a_type in [DType::F16, DType::Q4_0, DType::Q8_0, DType::Q4_K] {
                for (m, k) in [(768, 2048), (2048, 768)] {
                    let (m, k, tokens) = (shapes.dim(m), shapes.dim(k), shapes.dim(512));
                    let case = MulMmIdCase {
                        a_type,
                        b_type: DType::F32,
                        k,
                        m,
                        n_as: 128,
                        n_used: 8,
                        ne11: 1,
                        n_tokens: tokens,
                        routing: Routing::Random,
                        b_row_pad: 0,
                        b_batch_pad: 0,
                        prec: Prec::Default,
                        a_blocks: weights,
                        b_dist: Dist::Normal,
                        seed: 1,
                        cm2,
                        cm1: false,
                    };
                    push(
                        format!("MoE 128×{m}×{k} {a_type}, {tokens} tok{}", crate::model::work::cm2_label(cm2)),
                        case,
                    );
                }
            }
        }
        rows
    }
}

/// What a row asks of the device. A quantized expert type has one row per path, standing for
/// the host's one slot of that type, and the device decides its accumulators: f16 where it
/// has them, the `_fp32` (scalar) or f32-accumulator (cm1) variant where not
/// (`runners::mul_mm::id_pipeline`, `device_staging`). So that row does not ask for f16
/// accumulators; without this, no quantized experts ran on a device without them.
fn host_slot(p: &Family) -> Family {
    Family {
        acc16: p.acc16 && !p.a.is_quantized(),
        ..*p
    }
}

/// Cases for the ID family (a, b, acc16) on the path `mode` (cm1 as scalar).
pub fn strategy(a: DType, b: DType, acc16: bool, mode: Mode) -> impl Strategy<Value = MulMmIdCase> {
    let (cm1, cm2) = (mode == Mode::Cm1, mode == Mode::Cm2);
    let typed = proptest::sample::select(inputs_for(a, b, true, cm2)).prop_flat_map(
        move |(a_in, b_in, pad)| {
            let k = if cm2 {
                cm2_k_strategy(a_in)
            } else {
                k_strategy(a_in)
            };
            // A gap after each token's rows (kept only with several tokens, below).
            (Just(a_in), Just(b_in), (pad_strategy(pad), gap_strategy()), k)
        },
    );
    // Quantized experts ignore the request: generate both. Others follow the family.
    let prec = if a.is_quantized() {
        prop_oneof![Just(Prec::Default), Just(Prec::F32)].boxed()
    } else {
        super::mul_mm::prec_strategy(a, acc16)
    };
    let min_tokens = if a == DType::Bf16 { 1 } else { 2 };
    // cm2 tiles are 64 (quantized), 64/128/256 (f16, bf16) tokens wide.
    let n_tokens = if cm2 {
        prop_oneof![6 => min_tokens..=40usize, 2 => 41usize..=140, 1 => 250usize..=270].boxed()
    } else {
        prop_oneof![6 => min_tokens..=40usize, 2 => 41usize..=140].boxed()
    };
    let n_used = prop_oneof![12 => 1usize..=8, 3 => 9usize..=64, 2 => 180usize..=700];
    let n_as = prop_oneof![4 => 1usize..=8, 2 => 9usize..=32];
    // ne11: 1 (shared row), n_used (a row per slot), or another divisor (picked by index).
    let ne11 = prop_oneof![Just(0usize), Just(1usize), 2usize..64];
    (
        Routing::strategy(),
        Blocks::strategy(),
        Dist::strategy(),
        typed,
        (edge_strategy(1), n_as, n_used, n_tokens, ne11),
        prec,
        any::<u64>(),
    )
        .prop_map(
            move |(
                routing,
                a_blocks,
                b_dist,
                (a_type, b_type, (b_row_pad, b_batch_pad), k),
                (m, n_as, n_used, n_tokens, ne11),
                prec,
                seed,
            )| {
                let block = a_type.block_len();
                // Many slots: few tokens, short K, few rows, still several chunks.
                let (k, m, n_tokens) = if n_used > 64 {
                    let past_one_chunk = runners::mul_mm::ROW_IDS / n_used + 1;
                    (
                        k.min(64.max(block)),
                        m.min(16),
                        n_tokens.min(24).max(past_one_chunk),
                    )
                } else {
                    (k, m, n_tokens)
                };
                // lavapipe runs at most 65535 loop iterations per invocation (see
                // shaders/mul_mm.comp): with every slot of every token on one expert, a
                // workgroup does about n_used column tiles of K/16 steps each. Keep
                // n_used·K ≤ 32768 so those cases stay inside it.
                let k = k.min((32768 / n_used / block * block).max(block));
                let pairs = n_used * n_tokens;
                let k = if m * k * pairs > PRODUCTS {
                    ((PRODUCTS / (m * pairs)) / block * block).max(block)
                } else {
                    k
                };
                let m = m.min((PRODUCTS / (k * pairs)).max(1));
                let n_as = n_as.min((EXPERT_ELEMENTS / (k * m)).max(1));
                let divisors: Vec<usize> = (1..=n_used).filter(|d| n_used % d == 0).collect();
                let ne11 = match ne11 {
                    0 => 1,
                    1 => n_used,
                    i => divisors[i % divisors.len()],
                };
                MulMmIdCase {
                    a_type,
                    b_type,
                    k,
                    m,
                    n_as,
                    n_used,
                    ne11,
                    n_tokens,
                    routing,
                    b_row_pad,
                    b_batch_pad: if n_tokens > 1 { b_batch_pad } else { 0 },
                    prec,
                    a_blocks,
                    b_dist,
                    seed,
                    cm2,
                    cm1,
                }
            },
        )
}

/// Large MUL_MAT_ID products, where the host picks its large tile (§8.2; later upstream's ID
/// tile selector, 0.1.161): experts of M = 129–136 or 250–260 rows (past 64, several 128-row
/// tiles) and 129–140 tokens (past 64, and past cm2's 64/128-wide ID tiles), one or two slots
/// on up to four experts, K of 256–512 (no split-k on MUL_MAT_ID): up to 260·140·2·512 ≈ 2²⁵
/// products.
pub fn large_strategy(
    a: DType,
    b: DType,
    acc16: bool,
    mode: Mode,
) -> impl Strategy<Value = MulMmIdCase> {
    let (cm1, cm2) = (mode == Mode::Cm1, mode == Mode::Cm2);
    let typed = proptest::sample::select(inputs_for(a, b, true, cm2)).prop_flat_map(
        |(a_in, b_in, pad)| {
            let block = a_in.block_len();
            let k = (256usize..=512).prop_map(move |k| k.div_ceil(block) * block);
            (Just(a_in), Just(b_in), pad_strategy(pad), k)
        },
    );
    let prec = if a.is_quantized() {
        prop_oneof![Just(Prec::Default), Just(Prec::F32)].boxed()
    } else {
        super::mul_mm::prec_strategy(a, acc16)
    };
    let m = prop_oneof![2 => 129usize..=136, 1 => 250usize..=260];
    (
        Routing::strategy(),
        Blocks::strategy(),
        Dist::strategy(),
        typed,
        (m, 1usize..=4, 1usize..=2, 129usize..=140, any::<bool>()),
        prec,
        any::<u64>(),
    )
        .prop_map(
            move |(
                routing,
                a_blocks,
                b_dist,
                (a_type, b_type, b_row_pad, k),
                (m, n_as, n_used, n_tokens, shared_row),
                prec,
                seed,
            )| MulMmIdCase {
                a_type,
                b_type,
                k,
                m,
                n_as,
                n_used,
                ne11: if shared_row { 1 } else { n_used },
                n_tokens,
                routing,
                b_row_pad,
                b_batch_pad: 0,
                prec,
                a_blocks,
                b_dist,
                seed,
                cm2,
                cm1,
            },
        )
}

impl fmt::Display for MulMmIdCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}×{} K={} M={} experts {} slots {} ne11 {} tokens {} routing {:?} pad {}{} prec {:?} A {:?} B {:?} seed {}",
            match self.mode() {
                Mode::Cm2 => "cm2 ",
                Mode::Cm1 => "cm1 ",
                _ => "",
            },
            self.a_type,
            self.b_type,
            self.k,
            self.m,
            self.n_as,
            self.n_used,
            self.ne11,
            self.n_tokens,
            self.routing,
            self.b_row_pad,
            gap_words(self.b_batch_pad),
            self.prec,
            self.a_blocks,
            self.b_dist,
            self.seed
        )
    }
}

impl CaseModel for MulMmIdCase {
    /// Cooperative matrices on the cm1 and cm2 paths, bf16 ones for a bf16 A there.
    fn extensions(&self) -> vkdiff_gpu::device::Extensions {
        super::coopmat_extensions(
            self.mode() == Mode::Cm1,
            self.mode() == Mode::Cm2,
            self.a_type,
        )
    }

    fn variant(&self) -> String {
        match runners::mul_mm::choose_id(
            self.mode(),
            self.a_type,
            self.b_type,
            self.b_row_pad == 0,
            self.prec,
        ) {
            Ok(s) => s.selection.name(false),
            Err(_) => format!("matmul_id_{}_{}", self.a_type, self.b_type),
        }
    }

    fn validate(&self) -> Result<(), String> {
        let a_ok = matches!(self.a_type, DType::F32 | DType::F16 | DType::Bf16)
            || QUANT_TYPES.contains(&self.a_type);
        if !a_ok {
            return Err(format!("matmul_id experts may not be {}", self.a_type));
        }
        match self.b_type {
            DType::F32 | DType::F16 => {}
            DType::Bf16 if self.a_type == DType::Bf16 => {}
            b => {
                return Err(format!(
                    "matmul_id b may not be {b} with {} experts",
                    self.a_type
                ))
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
            "experts",
            &[("K", self.k), ("M", self.m), ("n_as", self.n_as)],
        )?;
        super::check_sizes(
            "b",
            &[
                ("K + pad", self.k.saturating_add(self.b_row_pad)),
                ("ne11", self.ne11),
                ("tokens", self.n_tokens),
            ],
        )?;
        super::check_sizes(
            "dst",
            &[
                ("M", self.m),
                ("n_used", self.n_used),
                ("tokens", self.n_tokens),
            ],
        )?;
        if self.n_used % self.ne11 != 0 {
            return Err(format!(
                "ne11 = {} does not divide n_used = {} (ggml_mul_mat_id)",
                self.ne11, self.n_used
            ));
        }
        Ok(())
    }

    fn evaluate(&self, ctx: &mut Ctx) -> Outcome {
        if let Some(skip) = super::later_type_skip(ctx, self.a_type) {
            return skip;
        }
        let (a, b, ids) = match self.inputs() {
            Ok(x) => x,
            Err(e) => return Outcome::Skip(format!("invalid case: {e}")),
        };
        let mode = mode_on(self.cm1, self.cm2, ctx.caps());
        let plan =
            match runners::mul_mm::plan_id(ctx.caps(), mode, &a, &b, &ids, self.prec) {
                Ok(p) => p,
                Err(reason) => return Outcome::Skip(format!("precondition: {reason}")),
            };
        // The reference and the bounds of these inputs on this plan: kept across a bench
        // row's evaluations (the same inputs each round).
        let lat = ctx.latitude();
        let int_dot_plans = self.int_dot_plans(
            lat.later_host && ctx.caps().integer_dot,
            mode,
            ctx.caps().subgroup_size,
        );
        let key = || {
            format!("mul_mm_id {self} {mode:?} {lat:?} plan {plan:?} int dot {int_dot_plans:?}")
        };
        let judged = crate::model::cases::data::kept(key, || -> Result<_, Box<Outcome>> {
            let want = match mul_mat_id::mul_mat_id(&a, &b, &ids) {
                Ok(w) => w,
                Err(e) => return Err(Box::new(Outcome::Skip(format!("ggml rejects the inputs: {e}")))),
            };
            let (a_rows, b_rows) = match (a.rows(), b.rows()) {
                (Ok(x), Ok(y)) => (x, y),
                (Err(e), _) | (_, Err(e)) => return Err(Box::new(Outcome::Error(e.to_string()))),
            };
            // dst column (slot e, token t) multiplies expert ids[t][e] by b row (e mod ne11, t).
            let columns: Vec<(usize, usize)> = self
                .ids()
                .iter()
                .enumerate()
                .map(|(c, &x)| {
                    let (t, e) = (c / self.n_used, c % self.n_used);
                    (x as usize * self.m, t * self.ne11 + e % self.ne11)
                })
                .collect();
            let spec = |i: usize, default: usize| {
                plan.chunks
                    .first()
                    .map_or(default, |c| c.dispatch.spec[i] as usize)
            };
            let arith = arith_of(&plan.staging, self.a_type, 1, self.k);
            let bounds = match mode {
                Mode::Cm2 => {
                    // The pin runs quantized MUL_MAT_ID on cm2 with f32 accumulators (§12 item 13);
                    // later upstream (0.1.161 ggml_vk_get_mul_mat_mat_f16acc) with f16 ones at
                    // GGML_PREC_DEFAULT. Through a later host: the looser of the two.
                    let mut stagings = vec![plan.staging];
                    if lat.later_host
                        && self.prec == Prec::Default
                        && self.a_type.is_quantized()
                        && !plan.staging.selection.acc16
                    {
                        let mut f16acc = plan.staging;
                        f16acc.selection.acc16 = true;
                        stagings.push(f16acc);
                    }
                    let mut candidates = Vec::new();
                    for s in &stagings {
                        match cm2_bounds(&a, &b, s, spec(3, 16), 1, self.k, &columns) {
                            Ok(b) => candidates.push(b),
                            Err(e) => return Err(Box::new(Outcome::Error(e))),
                        }
                    }
                    super::mul_mm::bounds::loosest_mm(candidates)
                }
                Mode::Cm1 => cm1_bounds(
                    &arith,
                    spec(9, 16),
                    self.k,
                    self.m,
                    &a_rows,
                    &b_rows,
                    &columns,
                ),
                Mode::Fp16 | Mode::Fp32 => {
                    crate::model::cases::mul_mm::bounds::mul_mm_bounds(&arith, self.k, self.m, &a_rows, &b_rows, &columns)
                }
            };
            let mut bounds = bounds;
            // MXFP4's flushable scales (f16 accumulators' unit: the larger).
            if let Err(e) = super::mxfp4::add_mat_mat_terms(
                &mut bounds.bounds,
                &a,
                &b_rows,
                self.k,
                self.m,
                &columns,
                crate::model::tolerance::Fp::F16.unit(),
            ) {
                return Err(Box::new(Outcome::Error(e)));
            }
            // ggml's integer-dot MUL_MAT_ID (MMQ, MMVQ), where the host may take one: their hull.
            let mut int_dot: Option<Vec<(f64, f64)>> = None;
            for p in &int_dot_plans {
                let c = match super::intdot::mat_candidate(&a, &b_rows, &columns, *p) {
                    Ok(c) => c,
                    Err(e) => return Err(Box::new(Outcome::Error(e.to_string()))),
                };
                int_dot = Some(match int_dot {
                    Some(h) => h.iter().zip(&c).map(|(&x, &y)| super::intdot::hull(x, y)).collect(),
                    None => c,
                });
            }
            Ok((want, bounds, int_dot))
        });
        let (want, bounds, int_dot) = match judged {
            Ok(x) => x,
            Err(outcome) => return *outcome,
        };
        let op = GraphOp::MulMatId {
            a: &a,
            b: &b,
            ids: &ids,
            prec_f32: self.prec == Prec::F32,
        };
        let run = match ctx.run_op(want.ne, &op, |gpu, tree| {
            runners::mul_mm::run_id(
                gpu,
                tree,
                &MulMmIdRun {
                    a: &a,
                    b: &b,
                    ids: &ids,
                    mode,
                    prec: self.prec,
                },
            )
        }) {
            Ok(r) => r,
            Err(outcome) => return outcome,
        };
        judge_with(&run, &want, &bounds, None, int_dot.as_deref())
    }

    fn unreal_inputs(&self) -> Vec<String> {
        repeated_forced(&self.ids(), self.n_used)
    }

    fn path(&self) -> String {
        mm_path(mode_of(self.cm1, self.cm2))
    }

    fn axes(&self) -> [&'static str; 4] {
        ["rows", "slots", "tokens", "i3"]
    }

    fn facts(&self) -> Vec<String> {
        let mut f = vec![
            k_fact(self.k, self.a_type.block_len()),
            rows(self.m),
            format!("tokens {}", bucket(self.n_tokens)),
            format!("slots {}", bucket(self.n_used)),
            prec_fact(self.prec),
        ];
        if repeated_expert(&self.ids(), self.n_used) {
            f.push(REPEATED_FACT.into());
        }
        if self.b_row_pad > 0 {
            f.push("padded B rows".into());
        }
        if self.b_batch_pad > 0 {
            f.push(B_GAPS_FACT.into());
        }
        // July 2025 hosts keep row ids for at most 4096 pairs in one dispatch.
        if self.n_used * self.n_tokens > 4096 {
            f.push("more than 4096 (slot, token) pairs".into());
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
            ("tokens", self.n_tokens),
        ]
    }

    fn work(&self) -> Option<Work> {
        // Every expert's weights once (a batch of tokens routes to most of them).
        let a = (self.a_type.row_bytes(self.k).ok()? * self.m * self.n_as) as f64;
        let rows = (self.n_used * self.n_tokens) as f64;
        Some(Work {
            bytes: a
                + (self.b_type.row_bytes(self.k).ok()? * self.ne11 * self.n_tokens) as f64
                + 4.0 * self.m as f64 * rows,
            flops: 2.0 * (self.k * self.m) as f64 * rows,
        })
    }
}

impl MulMmIdCase {
    /// The integer-dot candidates of this case, where `int_dot_host` (a real host on a device
    /// with integer-dot acceleration) may quantize b (f32, contiguous) to q8_1:
    /// - MMQ's MUL_MAT_ID (`mul_mmq.comp`) on a scalar family (cm1's integer-dot body is not
    ///   modelled) for an A type with an MMQ body: no split_k, f32 accumulators;
    /// - MMVQ's mat-vec ID on any family for up to 8 tokens (later hosts send such a
    ///   MUL_MAT_ID to the mat-vec ID kernel, llama.cpp PR 18918, and NVIDIA's take MMVQ for
    ///   every batch of two or more) for an A type with an MMVQ body.
    fn int_dot_plans(
        &self,
        int_dot_host: bool,
        mode: Mode,
        subgroup: u32,
    ) -> Vec<super::intdot::IntDotPlan> {
        use super::intdot::{int_dot_types, IntDotPath, IntDotPlan};
        let mut plans = Vec::new();
        // Integer dot needs a contiguous b: no padded rows, no gaps.
        let contiguous = self.b_row_pad == 0 && self.b_batch_pad == 0;
        if !(int_dot_host && self.b_type == DType::F32 && contiguous) {
            return plans;
        }
        if matches!(mode, Mode::Fp32 | Mode::Fp16)
            && int_dot_types(IntDotPath::Mmq).contains(&self.a_type)
        {
            plans.push(IntDotPlan::mmq(self.a_type, &[(1, self.k)], mode == Mode::Fp16, false));
        }
        if self.n_tokens <= 8 && int_dot_types(IntDotPath::Mmvq).contains(&self.a_type) {
            plans.push(IntDotPlan::mmvq(self.a_type, self.k, subgroup));
        }
        plans
    }

    /// The case's path.
    pub fn mode(&self) -> Mode {
        mode_of(self.cm1, self.cm2)
    }



    /// The ids, token-major, each in [0, n_as), from the seed's ids stream.
    pub fn ids(&self) -> Vec<i32> {
        let mut r = rng(self.seed, 2);
        let n = self.n_as;
        let mut ids = Vec::with_capacity(self.n_used * self.n_tokens);
        for _ in 0..self.n_tokens {
            match self.routing {
                Routing::AllToOne => ids.extend(std::iter::repeat_n(n - 1, self.n_used)),
                Routing::Distinct => {
                    let mut perm: Vec<usize> = (0..n).collect();
                    perm.shuffle(&mut r);
                    ids.extend((0..self.n_used).map(|e| perm[e % n]));
                }
                Routing::Random => ids.extend((0..self.n_used).map(|_| r.gen_range(0..n))),
                Routing::Repeated => {
                    let pairs: Vec<usize> = (0..self.n_used.div_ceil(2))
                        .map(|_| r.gen_range(0..n))
                        .collect();
                    ids.extend((0..self.n_used).map(|e| pairs[e / 2]));
                }
            }
        }
        ids.into_iter().map(|x| x as i32).collect()
    }

    /// The experts, b and ids, regenerated from the seed.
    pub fn inputs(&self) -> Result<(Tensor, Tensor, Tensor), String> {
        let experts = tensor(
            self.a_type,
            [self.k, self.m, self.n_as, 1],
            self.a_blocks,
            self.seed,
            0,
        );
        let b = b_tensor(
            self.b_type,
            [self.k, self.ne11, self.n_tokens, 1],
            self.b_row_pad,
            self.b_batch_pad,
            self.b_dist,
            self.seed,
        )?;
        let ids_bytes = self.ids().iter().flat_map(|x| x.to_le_bytes()).collect();
        let ids = Tensor::from_bytes(DType::I32, [self.n_used, self.n_tokens, 1, 1], ids_bytes)
            .map_err(|e| e.to_string())?;
        Ok((experts, b, ids))
    }

}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// Without f16 accumulators (no shaderFloat16, or ggml's scalar-fp32 configuration) a
    /// quantized expert row still runs, as the `_fp32` variant the plan selects; the f16
    /// experts' f16-accumulator row, one of two for its type, still skips.
    #[test]
    fn quantized_rows_run_without_f16_accumulators() {
        let caps = DeviceCaps {
            fp16: false,
            ..crate::model::cases::model_devices::lavapipe()
        };
        let row = |a| Family {
            a,
            b: DType::F32,
            acc16: true,
            mode: Mode::Fp16,
        };
        for a in [DType::Q4_0, DType::Q4_K, DType::Iq4Xs] {
            assert_eq!(MulMmId::requires(&row(a), &caps), None, "{a}");
            assert_eq!(MulMmId::ggml_skip(&row(a), Shaders::ScalarFp32), None, "{a}");
            let mut runner = TestRunner::deterministic();
            let c = strategy(a, DType::F32, true, Mode::Fp16)
                .new_tree(&mut runner)
                .unwrap()
                .current();
            let (ta, tb, ti) = c.inputs().unwrap();
            let mode = mode_on(false, false, &caps);
            let p = runners::mul_mm::plan_id(&caps, mode, &ta, &tb, &ti, c.prec).unwrap();
            assert!(!p.staging.selection.acc16 && mode == Mode::Fp32, "{c}: {p:?}");
        }
        assert!(MulMmId::requires(&row(DType::F16), &caps).is_some());
        assert!(MulMmId::ggml_skip(&row(DType::F16), Shaders::ScalarFp32).is_some());
    }

    #[test]
    fn every_case_of_a_row_runs_that_row_and_chunks_happen() {
        let caps = crate::model::cases::model_devices::lavapipe();
        for (a, b, acc16, mode) in all_families(true) {
            // A stream per family: adding a family (mxfp4) shifts no other's cases.
            let mut runner = TestRunner::deterministic();
            let caps = if mode == Mode::Fp16 {
                caps.clone()
            } else {
                crate::model::cases::model_devices::h100()
            };
            let name = family_name(a, b, acc16, true, mode);
            let (mut chunked, mut overfull) = (0, 0);
            for _ in 0..40 {
                let c = strategy(a, b, acc16, mode)
                    .new_tree(&mut runner)
                    .unwrap()
                    .current();
                assert_eq!(c.validate(), Ok(()), "{c}");
                assert_eq!(c.variant(), name, "{c}");
                let (ta, tb, ti) = c.inputs().unwrap();
                assert!(mul_mat_id::expert_ids(&ta, &ti).is_ok());
                let p = runners::mul_mm::plan_id(&caps, mode, &ta, &tb, &ti, c.prec)
                    .unwrap_or_else(|e| panic!("{c}: {e}"));
                assert_eq!(p.staging.selection.name(false), name, "{c}");
                chunked += usize::from(p.chunks.len() > 1);
                // An expert with more (slot, token) matches in a chunk than the dispatch
                // has columns (§8.5: upstream leaves those unwritten).
                let ids = c.ids();
                overfull += usize::from(p.chunks.iter().any(|ch| {
                    let bn = ch.dispatch.spec[2] as usize;
                    let cols = ch.tokens.div_ceil(bn) * bn;
                    let chunk_ids =
                        &ids[ch.token_start * c.n_used..(ch.token_start + ch.tokens) * c.n_used];
                    (0..c.n_as as i32).any(|x| chunk_ids.iter().filter(|&&y| y == x).count() > cols)
                }));
            }
            assert!(chunked >= 1, "{name}: no case spans several chunks");
            assert!(
                overfull >= 1,
                "{name}: no expert has more matches than columns"
            );
        }
    }

    #[test]
    fn large_cases_run_their_row_on_the_large_tile() {
        use runners::mul_mm::Tile;
        let mut runner = TestRunner::deterministic();
        for (a, b, acc16, mode) in all_families(true) {
            let name = family_name(a, b, acc16, true, mode);
            for _ in 0..4 {
                let c = large_strategy(a, b, acc16, mode)
                    .new_tree(&mut runner)
                    .unwrap()
                    .current();
                assert_eq!(c.validate(), Ok(()), "{c}");
                assert_eq!(c.variant(), name, "{c}");
                let (ta, tb, ti) = c.inputs().unwrap();
                let caps = crate::model::cases::model_devices::h100();
                let p = runners::mul_mm::plan_id(&caps, mode, &ta, &tb, &ti, c.prec)
                    .unwrap_or_else(|e| panic!("{c}: {e}"));
                assert_eq!(p.staging.selection.name(false), name, "{c}");
                if mode != Mode::Cm2 {
                    assert!(p.chunks.iter().all(|ch| ch.dispatch.tile == Tile::L), "{c}");
                }
            }
        }
    }

    #[test]
    fn routing_per_token() {
        let mut c = MulMmIdCase {
            a_type: DType::F32,
            b_type: DType::F32,
            k: 4,
            m: 3,
            n_as: 5,
            n_used: 3,
            ne11: 1,
            n_tokens: 4,
            routing: Routing::AllToOne,
            b_row_pad: 0,
            b_batch_pad: 0,
            prec: Prec::F32,
            a_blocks: Blocks::Quantized(Dist::Normal),
            b_dist: Dist::Normal,
            seed: 3,
            cm2: false,
            cm1: false,
        };
        assert_eq!(c.ids(), vec![4; 12]);
        c.routing = Routing::Distinct;
        for token in c.ids().chunks(3) {
            let mut t = token.to_vec();
            t.sort();
            t.dedup();
            assert_eq!(t.len(), 3, "{token:?}");
        }
        c.routing = Routing::Repeated;
        assert!(c.ids().chunks(3).all(|t| t[0] == t[1]));
    }
}
