//! RWKV_WKV7 cases. ggml accepts any head size S = C/H, so S is drawn widely (64 most often, as
//! in real models); a shader that only handles some sizes fails on the others: a finding.

pub mod bounds;

use std::fmt;

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use vkdiff_gpu::runners;
use vkdiff_reference::ops::wkv7::{wkv7, Wkv7Inputs};
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::data::{rng, values, Dist};
use super::{CaseModel, Outcome};
use crate::model::driver::{Ctx, GraphOp};
use crate::model::work::BenchShapes;
use crate::model::work::Work;
use crate::model::compare::compare;
use crate::model::facts::bucket;
use crate::model::kernels::KernelDef;

/// One RWKV_WKV7 evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wkv7Case {
    /// Head size S.
    pub head_size: usize,
    /// Heads H.
    pub heads: usize,
    /// Tokens per sequence (T = tokens_per_seq · seqs).
    pub tokens_per_seq: usize,
    /// Sequences B.
    pub seqs: usize,
    /// Distribution of r, k, v and the initial state.
    pub dist: Dist,
    /// a and b drawn freely from `dist` instead of RWKV-7's structure (a = −κ̂, b = κ̂·α with a
    /// unit vector κ̂ and α ∈ (0, 1), which keeps the state bounded): stresses growth.
    pub free_ab: bool,
    /// Data seed.
    pub seed: u64,
}

/// The kernel (registry line in `src/model/cases/mod.rs`).
pub struct Wkv7;

impl KernelDef for Wkv7 {
    type Case = Wkv7Case;
    type Params = ();
    const NAME: &'static str = "wkv7";
    const SHADER: &'static str = "wkv7.comp";
    const SUMMARY: &'static str = "RWKV-7 recurrence (GGML_OP_RWKV_WKV7), f32";
    const ERROR_MODEL: &'static str = "first-order running error of the recurrence: γ(S) per dot, γ(3) per state update, carried through |w| and |b| (src/model/cases/wkv7/bounds.rs)";

    fn variants() -> Vec<(String, ())> {
        vec![("rwkv_wkv7_f32".into(), ())]
    }

    fn strategy(_: &()) -> BoxedStrategy<Self::Case> {
        strategy().boxed()
    }

    const BENCH_ORDER: u8 = 6;
    /// RWKV-7 over 1024 tokens and over 1, 32 heads of 64.
    fn bench_rows(shapes: &BenchShapes) -> Vec<(String, Self::Case)> {
        let mut rows = Vec::new();
        let mut push = |label: String, case| rows.push((label, case));
        for t in [shapes.dim(1024), 1] {
            let wkv7 = Wkv7Case {
                head_size: 64,
                heads: 32,
                tokens_per_seq: t,
                seqs: 1,
                dist: Dist::Normal,
                free_ab: false,
                seed: 1,
            };
            push(format!("T={t} C=2048 S=64"), wkv7);
        }
        rows
    }
}

/// Head sizes: 64 (the real one) most often, any size up to 128 (our shader's fast-path
/// limit), 128 itself on its own (the workgroup size, where every invocation owns a row and the
/// arrays are full: a loop one step past S only shows there; mutants `j <= head_size` lived
/// through 200 cases when 128 was one size in 112), and sizes past it up to 256, which ggml
/// accepts as well (upstream's shader hard-codes 64).
///
/// Sequences are mostly short, with one arm of long ones (up to 1024 tokens, as in real
/// prompts) for head sizes up to 128: lavapipe stops every loop of a shader invocation after
/// 65535 iterations in total, which long sequences with S > 128 would pass on that driver
/// (see wkv7.comp). Free a/b sequences stay at ≤ 3 tokens: their state grows geometrically
/// and leaves f32's range, where ggml's f32 result and the exact reference part ways.
pub fn strategy() -> impl Strategy<Value = Wkv7Case> {
    // Arms simplest first: shrinking moves toward earlier arms, so a failure reaches S = 1.
    let head_size = prop_oneof![
        2 => 1usize..=16,
        3 => Just(64usize),
        1 => Just(128usize),
        2 => 17usize..=127,
        1 => 129usize..=256,
    ];
    (head_size, prop::bool::weighted(0.2))
        .prop_flat_map(|(head_size, free_ab)| {
            let tokens = if free_ab {
                (1usize..=3).boxed()
            } else if head_size <= 128 {
                prop_oneof![6 => 1usize..=12, 1 => 13usize..=1024].boxed()
            } else {
                (1usize..=12).boxed()
            };
            (
                Just(head_size),
                1usize..=3,
                tokens,
                1usize..=3,
                Dist::strategy(),
                Just(free_ab),
                any::<u64>(),
            )
        })
        .prop_map(
            |(head_size, heads, tokens_per_seq, seqs, dist, free_ab, seed)| Wkv7Case {
                head_size,
                heads,
                tokens_per_seq,
                seqs,
                dist,
                free_ab,
                seed,
            },
        )
}

impl fmt::Display for Wkv7Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "S={} H={} T={}×{} seqs {:?}{} seed {}",
            self.head_size,
            self.heads,
            self.tokens_per_seq,
            self.seqs,
            self.dist,
            if self.free_ab { " free a/b" } else { "" },
            self.seed
        )
    }
}

impl CaseModel for Wkv7Case {
    fn variant(&self) -> String {
        "rwkv_wkv7_f32".into()
    }

    fn validate(&self) -> Result<(), String> {
        let (s, h, t, b) = (self.head_size, self.heads, self.tokens_per_seq, self.seqs);
        super::check_sizes(
            "r/w/k/v/a/b",
            &[
                ("S", s),
                ("H", h),
                ("tokens per sequence", t),
                ("sequences", b),
            ],
        )?;
        super::check_sizes("state", &[("S", s), ("S", s), ("H", h), ("sequences", b)])
    }

    fn evaluate(&self, ctx: &mut Ctx) -> Outcome {
        let [r, w, k, v, a, b, state] = self.inputs();
        let inputs = Wkv7Inputs {
            r: &r,
            w: &w,
            k: &k,
            v: &v,
            a: &a,
            b: &b,
            state: &state,
        };
        let want = match wkv7(&inputs) {
            Ok(o) => o,
            Err(e) => return Outcome::Skip(format!("ggml rejects the shapes: {e}")),
        };
        let run = match ctx.run_op(
            want.ne,
            &GraphOp::Wkv7([&r, &w, &k, &v, &a, &b, &state]),
            |gpu, tree| runners::wkv7::run(gpu, tree, &inputs),
        ) {
            Ok(r) => r,
            Err(outcome) => return outcome,
        };
        let exact = |t: &Tensor| t.rows().expect("f32");
        let all = [&r, &w, &k, &v, &a, &b, &state].map(exact);
        let (s, h, t) = (self.head_size, self.heads, self.tokens_per_seq * self.seqs);
        let mut bounds = crate::model::cases::wkv7::bounds::wkv7_bounds(
            s,
            h,
            t,
            self.seqs,
            [
                &all[0], &all[1], &all[2], &all[3], &all[4], &all[5], &all[6],
            ],
        );
        // Inputs are finite; a state that overflows f32 somewhere is not modelled.
        crate::model::compare::undefined_where_non_finite(&want.values, &mut bounds);
        let y_len = s * h * t;
        let mut verdict = match compare(
            &run.values,
            &want.values,
            &bounds,
            |i| want.index_of(i),
            |i| if i < y_len { "y" } else { "state" },
        ) {
            Ok(v) => v,
            Err(e) => return Outcome::Error(e),
        };
        verdict.overrun = run.overrun;
        Outcome::from_verdict(verdict, run.gpu_ns)
    }

    fn facts(&self) -> Vec<String> {
        let mut f = Vec::new();
        // Upstream's shader is written for one head size, 64 (its workgroup size).
        f.push(format!(
            "head size {}{}",
            self.head_size,
            if self.head_size == 64 { "" } else { " (not 64)" }
        ));
        f.push(format!("tokens {}", bucket(self.tokens_per_seq)));
        if self.seqs > 1 {
            f.push("several sequences".into());
        }
        f
    }

    fn dims(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("head size", self.head_size),
            ("heads", self.heads),
            ("tokens", self.tokens_per_seq),
            ("sequences", self.seqs),
        ]
    }

    fn work(&self) -> Option<Work> {
        let (s, h, t, b) = (
            self.head_size as f64,
            self.heads as f64,
            (self.tokens_per_seq * self.seqs) as f64,
            self.seqs as f64,
        );
        let tensors = 6.0 * t * h * s + t * h * s + 2.0 * s * s * h * b;
        // Per token and head: sa (2S²), the update (5S²), y (2S²).
        Some(Work {
            bytes: 4.0 * tensors,
            flops: 9.0 * t * h * s * s,
        })
    }
}

impl Wkv7Case {
    /// The seven input tensors, regenerated from the seed.
    pub fn inputs(&self) -> [Tensor; 7] {
        let (s, h, t) = (self.head_size, self.heads, self.tokens_per_seq * self.seqs);
        let n = s * h * t;
        let mk = |v: Vec<f32>, ne| Tensor::from_f32(DType::F32, ne, &v).expect("f32");
        let x = |stream| values(self.dist, self.seed, stream, n);
        // Decay in (0, 1): w = exp(−exp(z)), z normal.
        let w: Vec<f32> = values(Dist::Normal, self.seed, 1, n)
            .iter()
            .map(|z| (-(z * 0.5).exp()).exp())
            .collect();
        let (a, b) = if self.free_ab {
            (x(4), x(5))
        } else {
            self.structured_ab()
        };
        let state = values(self.dist, self.seed, 6, s * s * h * self.seqs);
        let ne = [s, h, t, 1];
        [
            mk(x(0), ne),
            mk(w, ne),
            mk(x(2), ne),
            mk(x(3), ne),
            mk(a, ne),
            mk(b, ne),
            mk(state, [s * s * h, self.seqs, 1, 1]),
        ]
    }

    /// RWKV-7's own a and b: per token and head, a unit vector κ̂, a = −κ̂, b = κ̂ ⊙ α.
    fn structured_ab(&self) -> (Vec<f32>, Vec<f32>) {
        use rand::Rng;
        let s = self.head_size;
        let n = s * self.heads * self.tokens_per_seq * self.seqs;
        let kappa = values(Dist::Normal, self.seed, 4, n);
        let mut alpha_rng = rng(self.seed, 5);
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        for (i, chunk) in kappa.chunks_exact(s).enumerate() {
            let norm = chunk.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            for (j, &kj) in chunk.iter().enumerate() {
                let unit = kj / norm;
                a[i * s + j] = -unit;
                b[i * s + j] = unit * alpha_rng.gen_range(0.0..1.0f32);
            }
        }
        (a, b)
    }
}
