//! The error models checked by a second method: each kernel's arithmetic is emulated on the CPU
//! in the precision the shader runs it (f32, with and without fused multiply-adds, in
//! adversarial summation orders), and the model's bound must cover the emulated result's
//! distance from the exact one for every element. No GPU is involved: these tests judge the
//! bounds, not the shaders.

use proptest::prelude::*;
use vkdiff::tolerance::wkv7_bounds;

/// How one RWKV-7 state update `St·w + v·k + sa·b` is rounded: the shader writes it without
/// explicit fmas, so a compiler may contract any product into an add and sum in any order.
#[derive(Debug, Clone, Copy)]
enum Update {
    /// Three rounded products, then two rounded adds left to right.
    Plain,
    /// fma(sa, b, fma(St, w, v·k)).
    Fused,
    /// (v·k + sa·b) + St·w, all rounded.
    Reversed,
}

fn update(mode: Update, st: f32, w: f32, v: f32, k: f32, sa: f32, b: f32) -> f32 {
    match mode {
        Update::Plain => st * w + v * k + sa * b,
        Update::Fused => sa.mul_add(b, st.mul_add(w, v * k)),
        Update::Reversed => (v * k + sa * b) + st * w,
    }
}

/// A dot product in f32 with fmas, terms taken in `order`.
fn dot(x: &[f32], y: &[f32], order: &[usize]) -> f32 {
    order.iter().fold(0.0f32, |acc, &j| x[j].mul_add(y[j], acc))
}

/// One head of one sequence: the f32 emulation and the exact (f64) recurrence side by side.
/// Returns (emulated, exact) for y (tokens × S) followed by the final state (S × S).
fn run(
    s: usize,
    tokens: usize,
    inputs: &[Vec<f32>; 7],
    mode: Update,
    order: &[usize],
) -> (Vec<f32>, Vec<f64>) {
    let [r, w, k, v, a, b, state] = inputs;
    let mut st32 = state.clone();
    let mut st64: Vec<f64> = state.iter().map(|&x| x as f64).collect();
    let (mut got, mut want) = (vec![], vec![]);
    let mut final32 = vec![];
    for t in 0..tokens {
        let at = t * s;
        let tok = |x: &Vec<f32>| x[at..at + s].to_vec();
        let (r, w, k, v, a, b) = (tok(r), tok(w), tok(k), tok(v), tok(a), tok(b));
        for i in 0..s {
            let row32 = &mut st32[i * s..(i + 1) * s];
            let row64 = &mut st64[i * s..(i + 1) * s];
            let sa32 = dot(&a, row32, order);
            let sa64: f64 = (0..s).map(|j| a[j] as f64 * row64[j]).sum();
            for j in 0..s {
                row32[j] = update(mode, row32[j], w[j], v[i], k[j], sa32, b[j]);
                row64[j] = row64[j] * w[j] as f64 + v[i] as f64 * k[j] as f64 + sa64 * b[j] as f64;
            }
            got.push(dot(&r, row32, order));
            want.push((0..s).map(|j| r[j] as f64 * row64[j]).sum());
        }
        if t + 1 == tokens {
            final32 = st32.clone();
        }
    }
    got.extend(final32);
    want.extend(st64);
    (got, want)
}

fn inputs(s: usize, tokens: usize) -> impl Strategy<Value = [Vec<f32>; 7]> {
    let n = s * tokens;
    let val = prop_oneof![-4.0f32..4.0, -1e3f32..1e3, -1e-3f32..1e-3];
    (
        prop::collection::vec(val.clone(), n),
        prop::collection::vec(0.0f32..1.0, n),
        prop::collection::vec(val.clone(), n),
        prop::collection::vec(val.clone(), n),
        prop::collection::vec(-1.0f32..1.0, n),
        prop::collection::vec(-1.0f32..1.0, n),
        prop::collection::vec(val, s * s),
    )
        .prop_map(|(r, w, k, v, a, b, st)| [r, w, k, v, a, b, st])
}

fn case() -> impl Strategy<Value = (usize, usize, [Vec<f32>; 7], Update, Vec<usize>)> {
    (1usize..=12, 1usize..=24).prop_flat_map(|(s, tokens)| {
        (
            Just(s),
            Just(tokens),
            inputs(s, tokens),
            prop_oneof![
                Just(Update::Plain),
                Just(Update::Fused),
                Just(Update::Reversed)
            ],
            Just((0..s).collect::<Vec<_>>()).prop_shuffle(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// wkv7: the bound covers f32 arithmetic in any dot order and any contraction of the update.
    #[test]
    fn wkv7_bound_covers_emulated_f32((s, tokens, inputs, mode, order) in case()) {
        let (got, want) = run(s, tokens, &inputs, mode, &order);
        let exact: Vec<Vec<f64>> = inputs.iter().map(|x| x.iter().map(|&v| v as f64).collect()).collect();
        let bounds = wkv7_bounds(
            s, 1, tokens, 1,
            [&exact[0], &exact[1], &exact[2], &exact[3], &exact[4], &exact[5], &exact[6]],
        );
        prop_assert_eq!(bounds.len(), got.len());
        for (idx, ((&g, &w), &bound)) in got.iter().zip(&want).zip(&bounds).enumerate() {
            if !g.is_finite() || !w.is_finite() {
                continue; // overflow: the kernel's model leaves such elements unjudged
            }
            let err = (g as f64 - w).abs();
            prop_assert!(err <= bound, "element {}: |{} - {}| = {:e} > bound {:e} ({:?})", idx, g, w, err, bound, mode);
        }
    }
}

/// Mat-vec, float A: BLOCK_SIZE invocations each fold a strided share of the K products into
/// a running f32 sum with fmas (in any order), then the partial sums are combined by a
/// ⌈log₂ BLOCK_SIZE⌉-level tree (any pairing). The model charges γ(depth)·Σ|a·b| + floor.
fn mat_vec_emulated(a: &[f32], b: &[f32], block_size: usize, perm: &[usize], pairing: u64) -> f32 {
    let mut partial = vec![0.0f32; block_size];
    for (tid, p) in partial.iter_mut().enumerate() {
        // The share of invocation tid, in the adversarial order `perm` restricted to it.
        for &i in perm.iter().filter(|&&i| i % block_size == tid) {
            *p = a[i].mul_add(b[i], *p);
        }
    }
    // A tree of depth ⌈log₂ BLOCK_SIZE⌉: each level halves the count, pairing the survivors
    // in an order drawn from `pairing`.
    let mut rng = pairing;
    while partial.len() > 1 {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let rot = (rng >> 33) as usize % partial.len();
        partial.rotate_left(rot);
        let half = partial.len().div_ceil(2);
        let (lo, hi) = partial.split_at(half);
        let mut next = lo.to_vec();
        for (x, y) in next.iter_mut().zip(hi) {
            *x += *y;
        }
        partial = next;
    }
    partial[0]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// mat-vec: γ(mul_mat_vec_depth)·Σ|a·b| covers any share order and any tree pairing.
    #[test]
    fn mat_vec_bound_covers_emulated_f32(
        (a, b, block_size, perm, pairing) in (1usize..=300, prop_oneof![Just(1usize), Just(8), Just(16), Just(32), Just(64)])
            .prop_flat_map(|(k, bs)| {
                let val = prop_oneof![-4.0f32..4.0, -1e4f32..1e4, -1e-4f32..1e-4];
                (
                    prop::collection::vec(val.clone(), k),
                    prop::collection::vec(val, k),
                    Just(bs),
                    Just((0..k).collect::<Vec<_>>()).prop_shuffle(),
                    any::<u64>(),
                )
            })
    ) {
        let k = a.len();
        let got = mat_vec_emulated(&a, &b, block_size, &perm, pairing);
        let exact: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
        let magnitude: f64 = a.iter().zip(&b).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
        let bound = vkdiff::tolerance::mul_mat_vec_bounds(&[magnitude], k, block_size as u32, false)[0];
        let err = (got as f64 - exact).abs();
        prop_assert!(err <= bound, "K={} BLOCK_SIZE={}: |{} - {}| = {:e} > {:e}", k, block_size, got, exact, err, bound);
    }
}

/// Rounds `x` to the format `f` (round to nearest even, as the device's conversions do), or
/// to zero where `flush` and the result is below the format's smallest normal (Vulkan lets a
/// device flush subnormal inputs and results).
fn round_to(x: f32, f: vkdiff::tolerance::Fp, flush: bool) -> f32 {
    use vkdiff::tolerance::Fp;
    let r = match f {
        Fp::F16 => half::f16::from_f32(x).to_f32(),
        Fp::Bf16 => half::bf16::from_f32(x).to_f32(),
        Fp::F32 => x,
    };
    if flush && (r.abs() as f64) < f.min_normal() {
        0.0
    } else {
        r
    }
}

/// The scalar mul_mm chain of one output (§6.6), emulated: operands staged to their formats
/// (flushed or not), then per split σ ← σ + â·b̂ over k ascending in ACC_TYPE, either fused
/// (one f32 fma, then rounded to ACC_TYPE: an f16 fma computed through f32, as CPU drivers
/// do) or as a product rounded to ACC_TYPE and a rounded add; splits widened to f32 and added
/// in split order by the reduce.
fn mul_mm_emulated(
    a: &[f32],
    b: &[f32],
    arith: &vkdiff::tolerance::MulMmArith,
    fused: bool,
    flush: bool,
) -> f32 {
    let acc = arith.acc;
    let k = a.len();
    let k_split = if arith.split_k > 1 { arith.k_split } else { k };
    let mut total = 0.0f32;
    for s in 0..arith.split_k.max(1) {
        let (from, to) = ((s * k_split).min(k), ((s + 1) * k_split).min(k));
        let mut sigma = 0.0f32;
        for kk in from..to {
            let x = round_to(a[kk], arith.a_operand, flush);
            let y = round_to(b[kk], arith.b_operand, flush);
            sigma = if fused {
                round_to(x.mul_add(y, sigma), acc, flush)
            } else {
                let p = round_to(x * y, acc, flush);
                round_to(sigma + p, acc, flush)
            };
        }
        total = if s == 0 { sigma } else { total + sigma };
    }
    total
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// mul_mm scalar path: the running bound covers f16/bf16/f32 staging, f16 or f32
    /// accumulators, fused or unfused, flushed or kept subnormals and any forced split (k_split
    /// not a multiple of anything), wherever the emulated result is finite; where it is not,
    /// the model must have flagged a possible overflow.
    #[test]
    fn mul_mm_bound_covers_emulated_scalar_chain(
        (a, b, ops, fused, flush, split_k, extra) in (1usize..=600).prop_flat_map(|k| {
            use vkdiff::tolerance::Fp;
            let val = prop_oneof![
                4 => -4.0f32..4.0,
                1 => -300.0f32..300.0,
                1 => -1e-5f32..1e-5,
                1 => (-2048i32..2048).prop_map(|i| i as f32 / 64.0),
            ];
            let fmt = prop_oneof![Just(Fp::F16), Just(Fp::F32), Just(Fp::Bf16)];
            (
                prop::collection::vec(val.clone(), k),
                prop::collection::vec(val, k),
                (fmt.clone(), fmt, prop_oneof![Just(Fp::F16), Just(Fp::F32)]),
                any::<bool>(),
                any::<bool>(),
                1usize..=4,
                0usize..=3,
            )
        })
    ) {
        use vkdiff::tolerance::{mul_mm_bounds, MulMmArith};
        let k = a.len();
        let arith = MulMmArith {
            a_min_rounding: false,
            a_operand: ops.0,
            b_operand: ops.1,
            acc: ops.2,
            split_k,
            k_split: k.div_ceil(split_k) + extra,
        };
        let got = mul_mm_emulated(&a, &b, &arith, fused, flush);
        let (a64, b64): (Vec<f64>, Vec<f64>) = (a.iter().map(|&x| x as f64).collect(), b.iter().map(|&x| x as f64).collect());
        let exact: f64 = a64.iter().zip(&b64).map(|(x, y)| x * y).sum();
        let m = mul_mm_bounds(&arith, k, 1, &a64, &b64, &[(0, 0)]);
        if !got.is_finite() {
            prop_assert!(m.may_overflow[0], "{:?} fused {} flush {}: {} not flagged (exact {})", arith, fused, flush, got, exact);
        } else {
            let err = (got as f64 - exact).abs();
            prop_assert!(err <= m.bounds[0], "{:?} fused {} flush {}: |{} - {}| = {:e} > {:e}", arith, fused, flush, got, exact, err, m.bounds[0]);
        }
    }
}
