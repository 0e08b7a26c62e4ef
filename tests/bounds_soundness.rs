//! The error models checked by a second method: each kernel's arithmetic is emulated on the CPU
//! in the precision the shader runs it (f32, with and without fused multiply-adds, in
//! adversarial summation orders), and the model's bound must cover the emulated result's
//! distance from the exact one for every element. No GPU is involved: these tests judge the
//! bounds, not the shaders.
//!
//! § numbers: sections of docs/interface.md.

use proptest::prelude::*;
use vkdiff::cases::wkv7::bounds::wkv7_bounds;

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
    tree_sum(partial, pairing)
}

/// The workgroup's reduction of its invocations' partial sums: a tree of depth ⌈log₂ n⌉, each
/// level halving the count and pairing the survivors in an order drawn from `pairing`.
fn tree_sum(mut partial: Vec<f32>, pairing: u64) -> f32 {
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
        let bound = vkdiff::cases::mul_mat_vec::bounds::mul_mat_vec_bounds(&[magnitude], k, block_size as u32, false)[0];
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
    arith: &vkdiff::cases::mul_mm::bounds::MulMmArith,
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
        use vkdiff::cases::mul_mm::bounds::{mul_mm_bounds, MulMmArith};
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

/// A deterministic stream of numbers in [−1, 1] (which way each rounding of the emulated
/// transcendental functions errs).
struct Signs(u64);

impl Signs {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// tanh(x) in f32 anywhere within its bound ([`tanh_error`]), kept in [−1, 1].
    ///
    /// [`tanh_error`]: vkdiff::cases::flash_attn::bounds::tanh_error
    fn tanh(&mut self, x: f32) -> f32 {
        let x = x as f64;
        let t =
            x.tanh() + 0.99 * vkdiff::cases::flash_attn::bounds::tanh_error(x.abs()) * self.next();
        t.clamp(-1.0, 1.0) as f32
    }

    /// exp(x) in f32 anywhere within Vulkan's 3 + 2|x| ULP (an ULP at most 2⁻²³ relative).
    fn exp(&mut self, x: f32) -> f32 {
        if x == f32::NEG_INFINITY {
            return 0.0;
        }
        let ulps = (3.0 + 2.0 * (x as f64).abs()) * 2f64.powi(-23);
        ((x as f64).exp() * (1.0 + 0.99 * ulps * self.next())) as f32
    }
}

/// One output row's inputs to an emulation: its Q row, its K/V head's keys and values, its
/// mask row and its ALiBi slope.
struct FaRowInputs<'a> {
    q: &'a [f64],
    keys: Vec<&'a [f64]>,
    values: Vec<&'a [f64]>,
    mask: Option<&'a [f64]>,
    slope: f32,
}

fn fa_row_inputs<'a>(
    c: &vkdiff::cases::flash_attn::FlashAttnCase,
    alibi: &vkdiff_reference::ops::flash_attn::Alibi,
    row: &vkdiff_reference::ops::flash_attn::RowTerms,
    qr: &'a [f64],
    kr: &'a [f64],
    vr: &'a [f64],
    mr: Option<&'a [f64]>,
) -> FaRowInputs<'a> {
    let (d, dv, n, kv) = (c.d, c.dv(), c.n, c.kv);
    let ik = row.h / c.gqa;
    let iv = row.v_index.0;
    let slope = if c.max_bias > 0.0 {
        let (base, e) = alibi.slope_parts(row.h);
        base.powf(e as f32)
    } else {
        1.0
    };
    FaRowInputs {
        q: &qr[(row.h * n + row.q) * d..][..d],
        keys: (0..kv).map(|j| &kr[(ik * kv + j) * d..][..d]).collect(),
        values: (0..kv).map(|j| &vr[(iv * kv + j) * dv..][..dv]).collect(),
        mask: mr.map(|m| &m[row.q * kv..][..kv]),
        slope,
    }
}

/// One scalar flash-attention row (§9.8 scalar column), emulated in f32: q·s' in f32; each
/// logit a D_split-lane dot product (lane l takes d ≡ l mod D_split in the order `perm`, with
/// fmas) reduced by a butterfly; softcap·tanh (tanh anywhere within its bound); + slope·mask;
/// then per split the online softmax over tiles of Bc keys (running max from −FLT_MAX/2,
/// rescale by exp(M_old − M_new), f32 sums of P and P·v, keys of weight 0 skipped), the
/// split-k reduce, and O·(1/L).
fn fa_row_emulated(
    row: &FaRowInputs,
    (scale, softcap): (f32, f32),
    (d_split, bc, split_k): (usize, usize, usize),
    perm: &[usize],
    signs: &mut Signs,
) -> Vec<f32> {
    let (q, keys, values, mask, slope) = (row.q, &row.keys, &row.values, row.mask, row.slope);
    let kv = keys.len();
    let dv = values[0].len();
    let qs: Vec<f32> = q.iter().map(|&x| x as f32 * scale).collect();
    let logits: Vec<f32> = (0..kv)
        .map(|j| {
            // A masked key is skipped (as ggml's CPU path and our shader do): weight 0.
            if mask.is_some_and(|m| m[j] == f64::NEG_INFINITY) {
                return f32::NEG_INFINITY;
            }
            let mut lanes = vec![0.0f32; d_split];
            for &d in perm {
                lanes[d % d_split] = qs[d].mul_add(keys[j][d] as f32, lanes[d % d_split]);
            }
            let mut step = 1;
            while step < d_split {
                lanes = (0..d_split).map(|l| lanes[l] + lanes[l ^ step]).collect();
                step *= 2;
            }
            let mut s = lanes[0];
            if softcap != 0.0 {
                s = softcap * signs.tanh(s);
            }
            if let Some(m) = mask {
                s += slope * m[j] as f32;
            }
            s
        })
        .collect();
    // The host's split: whole tiles per split.
    let split_kv = kv.div_ceil(split_k).div_ceil(bc) * bc;
    let mut parts = vec![];
    for s in 0..kv.div_ceil(split_kv) {
        let (mut m, mut l, mut o) = (-f32::MAX / 2.0, 0.0f32, vec![0.0f32; dv]);
        let end = ((s + 1) * split_kv).min(kv);
        for tile in (s * split_kv..end).step_by(bc) {
            let keys = tile..(tile + bc).min(end);
            let m_new = keys.clone().map(|j| logits[j]).fold(m, f32::max);
            let alpha = signs.exp(m - m_new);
            l *= alpha;
            for x in o.iter_mut() {
                *x *= alpha;
            }
            for j in keys {
                let p = signs.exp(logits[j] - m_new);
                l += p;
                if p == 0.0 {
                    continue;
                }
                for (x, v) in o.iter_mut().zip(values[j]) {
                    *x = p.mul_add(*v as f32, *x);
                }
            }
            m = m_new;
        }
        parts.push((m, l, o));
    }
    let top = parts.iter().map(|p| p.0).fold(f32::NEG_INFINITY, f32::max);
    let (mut l, mut o) = (0.0f32, vec![0.0f32; dv]);
    for (m, ls, os) in &parts {
        let w = if parts.len() > 1 {
            signs.exp(m - top)
        } else {
            1.0
        };
        l = w.mul_add(*ls, l);
        for (x, y) in o.iter_mut().zip(os) {
            *x = w.mul_add(*y, *x);
        }
    }
    let inv = 1.0 / l;
    o.iter().map(|x| x * inv).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Flash attention, scalar path: the bound covers the emulated f32 kernel for any lane
    /// order, D_split, tile width, split count and errors of exp and tanh within Vulkan's
    /// limits, over the suite's own case strategy (masks, ALiBi, softcap, quantized K/V).
    #[test]
    fn flash_attn_scalar_bound_covers_emulated_f32(
        (c, d_split, bc, split_k, perm, signs) in prop_oneof![
            Just(vkdiff_reference::DType::F16),
            Just(vkdiff_reference::DType::Q8_0),
            Just(vkdiff_reference::DType::Q4_0)
        ]
        .prop_flat_map(|t| vkdiff::cases::flash_attn::strategy(vkdiff_gpu::runners::flash_attn::Path::Scalar, t))
        .prop_filter("in the pinned host's domain, one batch", |c| {
            c.named_precondition().is_none() && c.dv.is_none() && c.ne3 == 1 && c.kv <= 200
                && vkdiff_gpu::runners::flash_attn::HEAD_SIZES.contains(&c.d)
        })
        .prop_flat_map(|c| {
            let lsb = 1usize << c.d.trailing_zeros();
            let d = c.d;
            (
                Just(c),
                prop_oneof![Just(1usize), Just(2), Just(4), Just(8)].prop_filter("D_split ≤ lsb(D)/4", move |&s| s <= lsb / 4),
                prop_oneof![Just(32usize), Just(64)],
                1usize..=4,
                Just((0..d).collect::<Vec<_>>()).prop_shuffle(),
                any::<u64>(),
            )
        })
    ) {
        use vkdiff_reference::ops::flash_attn::{flash_attn_ext, FlashAttnInputs};
        use vkdiff::cases::flash_attn::bounds::{flash_attn_bounds, FaArith, FlashAttnShape};
        let (q, k, v, m) = c.inputs().unwrap();
        let p = FlashAttnInputs { q: &q, k: &k, v: &v, mask: m.as_ref(), sinks: None, params: c.params() };
        let want = flash_attn_ext(&p).unwrap();
        let shape = FlashAttnShape {
            d: c.d,
            kv: c.kv,
            bc: bc as u32,
            wg: 128,
            d_split: d_split as u32,
            split_k: c.kv.div_ceil(c.kv.div_ceil(split_k).div_ceil(bc) * bc) as u32,
            split_kv: c.kv.div_ceil(split_k).div_ceil(bc) * bc,
            softcap: c.softcap,
            alibi: vkdiff_reference::ops::flash_attn::Alibi::new(c.max_bias, c.heads()),
            arith: FaArith::Scalar,
            sinks: false,
            decode_roundings: [0, 0],
        };
        let (qr, kr, vr) = (q.rows().unwrap(), k.rows().unwrap(), v.rows().unwrap());
        let mr = m.as_ref().map(|m| m.rows().unwrap());
        let bounds = flash_attn_bounds(&shape, &want, &vr, v.ne(), None);
        let dv = c.dv();
        let mut signs = Signs(signs);
        for (r, row) in want.rows.iter().enumerate() {
            if row.fully_masked || row.non_finite {
                continue;
            }
            let inputs = fa_row_inputs(&c, &shape.alibi, row, &qr, &kr, &vr, mr.as_deref());
            let got = fa_row_emulated(
                &inputs, (c.params().dot_scale(), c.softcap),
                (d_split, bc, split_k), &perm, &mut signs,
            );
            for (i, g) in got.iter().enumerate() {
                let (w, b) = (want.out.values[r * dv + i], bounds[r * dv + i]);
                if !w.is_finite() {
                    continue; // a NaN or ±∞ in V (fuzzed block scales): left undefined
                }
                let err = (*g as f64 - w).abs();
                prop_assert!(err <= b, "{} row {} d {}: got {} want {} |err| {:e} > {:e} (D_split {} Bc {} split {})", c, r, i, g, w, err, b, d_split, bc, split_k);
            }
        }
    }
}

/// One cm1 flash-attention row (§9.8 cm1 column), emulated: q̂ = f16(f32(q·s')); K decoded in
/// f32 and rounded to f16; S = Σ_d q̂·k̂ in ACC_TYPE in the order `perm` (f16 accumulators:
/// every product and add rounded); softcap and mask results rounded to ACC_TYPE; per tile of Bc
/// keys the running maximum in f32 (from −FLT_MAX/2), α = exp(M − M') (0 before any key),
/// P = f16(exp(S − M')), L = L·α + Σ P in f32; O kept as `groups` partial sums per element
/// (each tile's keys split into `groups` consecutive runs), each O·α + f32(P)·v in ACC_TYPE
/// (a rounded product, then a rounded add; P = 0 adds nothing), the partial sums added by
/// butterfly at the end; O·f16(1/L) in ACC_TYPE. No split-k. f16 values are rounded to nearest
/// (not flushed: one of the behaviours the model allows).
fn fa_row_emulated_cm1(
    row: &FaRowInputs,
    (scale, softcap): (f32, f32),
    (bc, groups, f16acc): (usize, usize, bool),
    perm: &[usize],
    signs: &mut Signs,
) -> Vec<f32> {
    let (q, keys, values, mask, slope) = (row.q, &row.keys, &row.values, row.mask, row.slope);
    use vkdiff::tolerance::Fp;
    let acc = |x: f32| round_to(x, if f16acc { Fp::F16 } else { Fp::F32 }, false);
    let h = |x: f32| round_to(x, Fp::F16, false);
    let kv = keys.len();
    let dv = values[0].len();
    let qs: Vec<f32> = q.iter().map(|&x| h(x as f32 * scale)).collect();
    let logits: Vec<f32> = (0..kv)
        .map(|j| {
            if mask.is_some_and(|m| m[j] == f64::NEG_INFINITY) {
                return f32::NEG_INFINITY;
            }
            let mut s = 0.0f32;
            for &d in perm {
                s = acc(s + acc(qs[d] * h(keys[j][d] as f32)));
            }
            if softcap != 0.0 {
                s = acc(softcap * signs.tanh(s));
            }
            if let Some(m) = mask {
                s = acc(s + slope * m[j] as f32);
            }
            s
        })
        .collect();
    let start = -f32::MAX / 2.0;
    let (mut m, mut l) = (start, 0.0f32);
    let mut o = vec![vec![0.0f32; dv]; groups];
    for tile in (0..kv).step_by(bc) {
        let end = (tile + bc).min(kv);
        let m_new = (tile..end).map(|j| logits[j]).fold(m, f32::max);
        let alpha = if m == start {
            0.0
        } else {
            signs.exp(m - m_new)
        };
        let p: Vec<f32> = (tile..end)
            .map(|j| h(signs.exp(logits[j] - m_new)))
            .collect();
        l = l * alpha + p.iter().sum::<f32>();
        for (g, og) in o.iter_mut().enumerate() {
            for x in og.iter_mut() {
                *x = acc(*x * acc(alpha));
            }
            let run = bc / groups;
            for j in (tile + g * run..tile + (g + 1) * run).filter(|&j| j < end) {
                let pj = p[j - tile];
                if pj == 0.0 {
                    continue;
                }
                for (x, v) in og.iter_mut().zip(values[j]) {
                    *x = acc(*x + acc(pj * *v as f32));
                }
            }
        }
        m = m_new;
    }
    let mut step = 1;
    while step < groups {
        o = (0..groups)
            .map(|g| {
                o[g].iter()
                    .zip(&o[g ^ step])
                    .map(|(a, b)| acc(a + b))
                    .collect()
            })
            .collect();
        step *= 2;
    }
    let inv = acc(h(1.0 / l));
    o[0].iter().map(|x| acc(x * inv)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Flash attention, cm1 path: the bound (with the host's tiles and D_split) covers the
    /// emulated kernel for 1 to WorkGroupSize/D_split partial sums per element, any order of
    /// S's terms and errors of exp and tanh within Vulkan's limits, both accumulators, over the
    /// suite's own case strategy.
    #[test]
    fn flash_attn_cm1_bound_covers_emulated_groups(
        (c, groups, perm, signs) in prop_oneof![
            Just(vkdiff_reference::DType::F16),
            Just(vkdiff_reference::DType::Q8_0),
            Just(vkdiff_reference::DType::Q4_0)
        ]
        .prop_flat_map(|t| vkdiff::cases::flash_attn::strategy(vkdiff_gpu::runners::flash_attn::Path::Cm1, t))
        .prop_filter("in the pinned host's domain, one batch, no split", |c| {
            c.named_precondition().is_none() && c.dv.is_none() && c.ne3 == 1 && c.kv <= 200
                && c.split_k.is_none()
                && vkdiff_gpu::runners::flash_attn::HEAD_SIZES.contains(&c.d)
        })
        .prop_flat_map(|c| {
            let d = c.d;
            (
                Just(c),
                prop_oneof![Just(1usize), Just(2), Just(4), Just(8), Just(16)],
                Just((0..d).collect::<Vec<_>>()).prop_shuffle(),
                any::<u64>(),
            )
        })
    ) {
        use vkdiff_reference::ops::flash_attn::{flash_attn_ext, FlashAttnInputs};
        use vkdiff::cases::flash_attn::bounds::flash_attn_bounds;
        use vkdiff_gpu::runners::flash_attn::{self as fa, Path};
        let shape16 = |acc: &str| vkdiff_gpu::caps::CoopmatShape {
            m: 16, n: 16, k: 16, ab: "f16".into(), c: acc.into(), subgroup_scope: true,
        };
        let caps = vkdiff_gpu::DeviceCaps {
            subgroup_size: 32,
            shared_memory: 48 * 1024,
            coopmat: true,
            coopmat_shapes: vec![shape16("f16"), shape16("f32")],
            ..Default::default()
        };
        let (q, k, v, m) = c.inputs().unwrap();
        let p = FlashAttnInputs { q: &q, k: &k, v: &v, mask: m.as_ref(), sinks: None, params: c.params() };
        prop_assume!(fa::precondition(c.path, &p).is_ok());
        let plan = fa::plan(c.path, &caps, c.prec_f32, &p, c.split_k);
        prop_assume!(plan.path == Path::Cm1);
        let d_split = fa::d_split(&caps, c.d);
        let shape = c.shape(&plan, d_split);
        prop_assume!(shape.split_k <= 1);
        prop_assume!(groups as u32 <= shape.wg / d_split && shape.bc as usize % groups == 0);
        let want = flash_attn_ext(&p).unwrap();
        let extra = c.coopmat_terms(&plan, false, &q, &k, &v, &want).unwrap();
        let vr = v.rows().unwrap();
        let bounds = flash_attn_bounds(
            &shape, &want, &vr, v.ne(),
            extra.as_ref().map(|(r, e)| (r.as_slice(), e.as_slice())),
        );
        let (qr, kr) = (q.rows().unwrap(), k.rows().unwrap());
        let mr = m.as_ref().map(|m| m.rows().unwrap());
        let dv = c.dv();
        let mut signs = Signs(signs);
        for (r, row) in want.rows.iter().enumerate() {
            if row.fully_masked || row.non_finite {
                continue;
            }
            let inputs = fa_row_inputs(&c, &shape.alibi, row, &qr, &kr, &vr, mr.as_deref());
            let f16acc = !plan.f32acc;
            let got = fa_row_emulated_cm1(
                &inputs, (c.params().dot_scale(), c.softcap),
                (shape.bc as usize, groups, f16acc), &perm, &mut signs,
            );
            for (i, g) in got.iter().enumerate() {
                let (w, b) = (want.out.values[r * dv + i], bounds[r * dv + i]);
                if !w.is_finite() || b.is_nan() {
                    continue; // undefined (NaN/∞ inputs) or not judged (f16 range)
                }
                let err = (*g as f64 - w).abs();
                prop_assert!(err <= b, "{} row {} d {}: got {} want {} |err| {:e} > {:e} (groups {} f16acc {})", c, r, i, g, w, err, b, groups, f16acc);
            }
        }
    }
}

/// `x` rounded to the format `f`: to nearest, or toward zero (a directed rounding, as tensor
/// cores truncate), and flushed to zero below the smallest normal where `flush`. Past the
/// largest finite value the result is ±∞ either way, as the H100's f16 accumulators gave (a
/// device that saturated at ±65504 and went on would produce values the suite's judge does
/// not excuse: `MulMmBounds::judged_bounds` excuses only ±∞ and ±65504 themselves).
fn round_dir(x: f64, f: vkdiff::tolerance::Fp, toward_zero: bool, flush: bool) -> f64 {
    use vkdiff::tolerance::Fp;
    if x.abs() >= f.overflow() {
        return x.signum() * f64::INFINITY;
    }
    let down = |bits: u32| if toward_zero { bits - 1 } else { bits };
    let r = match f {
        Fp::F16 => {
            let h = half::f16::from_f64(x);
            let h = if h.to_f64().abs() > x.abs() {
                half::f16::from_bits(down(h.to_bits() as u32) as u16)
            } else {
                h
            };
            h.to_f64()
        }
        Fp::Bf16 => {
            let h = half::bf16::from_f64(x);
            let h = if h.to_f64().abs() > x.abs() {
                half::bf16::from_bits(down(h.to_bits() as u32) as u16)
            } else {
                h
            };
            h.to_f64()
        }
        Fp::F32 => {
            let s = x as f32;
            let s = if (s as f64).abs() > x.abs() {
                f32::from_bits(down(s.to_bits()))
            } else {
                s
            };
            s as f64
        }
    };
    if flush && r.abs() < f.min_normal() {
        0.0
    } else {
        r
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The coopmat step model (cm2 steps of BK, cm1 steps of TK = 16): each coopMatMulAdd sums
    /// its BK products and the accumulator in any order, rounding each add (and, in an f16
    /// accumulator, each product) to nearest or toward zero; splits add in f32. The bound
    /// covers it wherever the result is finite, and flags the others.
    #[test]
    fn coopmat_step_bound_covers_any_order_and_directed_rounding(
        (a, b, fmt, acc, bk, split_k, order_seed, toward_zero, flush) in (1usize..=700).prop_flat_map(|k| {
            use vkdiff::tolerance::Fp;
            let val = prop_oneof![
                4 => -4.0f32..4.0,
                1 => -200.0f32..200.0,
                1 => -1e-5f32..1e-5,
            ];
            (
                prop::collection::vec(val.clone(), k),
                prop::collection::vec(val, k),
                prop_oneof![Just(Fp::F16), Just(Fp::Bf16)],
                prop_oneof![Just(Fp::F16), Just(Fp::F32)],
                prop_oneof![Just(16usize), Just(32), Just(64)],
                1usize..=4,
                any::<u64>(),
                any::<bool>(),
                any::<bool>(),
            )
        })
    ) {
        use vkdiff::tolerance::Fp;
use vkdiff::cases::mul_mm::bounds_cm2::{mul_mm_cm2_bounds, Cm2Arith};
use vkdiff::cases::mul_mm::bounds::staged_operand_errors;
        let k = a.len();
        let a64: Vec<f64> = a.iter().map(|&x| x as f64).collect();
        let b64: Vec<f64> = b.iter().map(|&x| x as f64).collect();
        let ah: Vec<f64> = a64.iter().map(|&x| round_dir(x, fmt, false, false)).collect();
        let bh: Vec<f64> = b64.iter().map(|&x| round_dir(x, fmt, false, false)).collect();
        let k_split = k.div_ceil(split_k);
        let mut signs = Signs(order_seed);
        let mut total = 0.0f64;
        for s in 0..split_k {
            let (from, to) = ((s * k_split).min(k), ((s + 1) * k_split).min(k));
            let mut c = 0.0f64;
            for step in (from..to).step_by(bk) {
                let mut terms: Vec<f64> = (step..(step + bk).min(to))
                    .map(|kk| {
                        let p = ah[kk] * bh[kk];
                        if acc == Fp::F32 { p } else { round_dir(p, acc, toward_zero, flush) }
                    })
                    .collect();
                terms.push(c);
                // Any order: a shuffle drawn from the seed.
                for i in (1..terms.len()).rev() {
                    let j = ((signs.next() + 1.0) / 2.0 * (i + 1) as f64) as usize % (i + 1);
                    terms.swap(i, j);
                }
                c = terms.iter().skip(1).fold(terms[0], |x, &y| round_dir(x + y, acc, toward_zero, flush));
            }
            total = if s == 0 { c } else { round_dir(total + c, Fp::F32, false, false) };
        }
        let exact: f64 = a64.iter().zip(&b64).map(|(x, y)| x * y).sum();
        let arith = Cm2Arith { acc, bk, split_k, k_split };
        let (ea, eb) = (staged_operand_errors(&a64, false, fmt), staged_operand_errors(&b64, false, fmt));
        let m = mul_mm_cm2_bounds(&arith, k, 1, &a64, &ea, &b64, &eb, &[(0, 0)]);
        // As the suite judges it: where an overflow is possible, ±∞ (round to nearest) or
        // ±65504 (toward zero, or a clamping kernel) is excused; anything else is bounded.
        let bound = m.judged_bounds(&[total as f32])[0];
        let err = (total - exact).abs();
        prop_assert!(bound.is_nan() || err <= bound, "{:?} {:?} toward_zero {} flush {}: |{} - {}| = {:e} > {:e}", arith, fmt, toward_zero, flush, total, exact, err, bound);
    }
}

/// The arithmetic chains of the cm2 decode callbacks (shaders/dequant_funcs_cm2.comp), by the
/// formats that share one: which operations round to f16, which run in f32.
#[derive(Debug, Clone, Copy)]
enum DecodeChain {
    /// q4_0, q5_0, q8_0, iq4_nl: d·q, one f16 rounding.
    DQ,
    /// q3_K, q6_K, iq4_xs: f16(d·sc), then ·q in f16.
    DScQ,
    /// q4_1, q5_1: d·q + m in f16, as two roundings or one fma.
    DQPlusM { fused: bool },
    /// q2_K: ((d·sc)·q) − dmin·mn, every operation an f16 rounding.
    Q2K,
    /// q4_K: d·sc·q − dmin·mn in f32 (exact products, one f32 rounding), then one f16 rounding.
    Q4K,
    /// q5_K: d·sc and dmin·mn rounded to f16, the rest in f32, then one f16 rounding.
    Q5K,
}

/// One decode emulated from its factors: f16 operations as the exact f64 result rounded to
/// nearest f16 (f16·f16 and f16 sums are exact in f64), f32 ones likewise; with `flush`, every
/// f16 value below 2⁻¹⁴ (inputs included) becomes 0, as a device that flushes f16 denormals
/// does.
fn decode_emulated(
    chain: DecodeChain,
    [d, dmin]: [f64; 2],
    sc: f64,
    mn: f64,
    q: f64,
    flush: bool,
) -> f64 {
    let h = |x: f64| {
        let r = half::f16::from_f64(x).to_f64();
        if flush && r.abs() < 6.103515625e-5 {
            0.0
        } else {
            r
        }
    };
    let f = |x: f64| x as f32 as f64;
    let (d, dmin) = (h(d), h(dmin));
    match chain {
        DecodeChain::DQ => h(d * q),
        DecodeChain::DScQ => h(h(d * sc) * q),
        DecodeChain::DQPlusM { fused: false } => h(h(d * q) + dmin),
        DecodeChain::DQPlusM { fused: true } => h(d * q + dmin),
        DecodeChain::Q2K => h(h(h(d * sc) * q) - h(dmin * mn)),
        DecodeChain::Q4K => h(f(d * sc * q - dmin * mn)),
        DecodeChain::Q5K => h(f(h(d * sc) * q - h(dmin * mn))),
    }
}

/// Every finite f16 bit pattern, equally likely (both signs; subnormals and zeros included).
/// Drawn rather than filtered: rejecting the 1/32 of patterns that are ±∞ or NaN for two
/// scales took about 940 of 20,000 cases, near proptest's limit of 1,024 global rejects, and
/// the test aborted ("Too many global rejects") in about one run in twelve.
fn finite_f16_bits() -> impl Strategy<Value = u16> {
    (any::<bool>(), 0u16..0x7C00)
        .prop_map(|(negative, magnitude)| (u16::from(negative) << 15) | magnitude)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20000))]

    /// `tolerance::cm2_decode_error` against every decode chain, with scales from anywhere in
    /// f16's finite range (subnormals and the largest values included), the formats' integer
    /// ranges for scales, mins and quants, and cancellations d·sc·q ≈ dmin·mn drawn on purpose.
    /// Where the model says the f16 result may overflow, ±∞ is accepted.
    #[test]
    fn cm2_decode_bound_covers_emulated_f16_chains(
        d_bits in finite_f16_bits(),
        dmin_bits in finite_f16_bits(),
        sc in 0u32..64,
        mn in 0u32..64,
        q in 0u32..32,
        chain in prop_oneof![
            Just(DecodeChain::DQ),
            Just(DecodeChain::DScQ),
            Just(DecodeChain::DQPlusM { fused: false }),
            Just(DecodeChain::DQPlusM { fused: true }),
            Just(DecodeChain::Q2K),
            Just(DecodeChain::Q4K),
            Just(DecodeChain::Q5K),
        ],
        cancel in any::<bool>(),
        flush in any::<bool>(),
    ) {
        use vkdiff::cases::mul_mm::bounds_cm2::{cm2_decode_error, DecodeTerms};
        use vkdiff_reference::DType;
        let d = half::f16::from_bits(d_bits).to_f64();
        // A cancelling min: dmin = d, so d·sc·q − dmin·mn = d·(sc·q − mn) is 0 for mn = sc·q.
        let dmin = if cancel { d } else { half::f16::from_bits(dmin_bits).to_f64() };
        let (sc, mn, q) = (sc as f64, mn as f64, q as f64);
        // The formats' ranges (signed quants and scales where the format has them).
        let (dtype, sc, mn, q) = match chain {
            DecodeChain::DQ => (DType::Q8_0, 1.0, 0.0, q * 8.0 - 128.0),
            DecodeChain::DScQ => (DType::Q6_K, sc * 4.0 - 128.0, 0.0, q * 2.0 - 32.0),
            DecodeChain::DQPlusM { .. } => (DType::Q5_1, 1.0, 0.0, q),
            DecodeChain::Q2K => {
                let (s, qq) = (sc % 16.0, q % 4.0);
                (DType::Q2_K, s, if cancel { (s * qq).min(15.0) } else { mn % 16.0 }, qq)
            }
            DecodeChain::Q4K => {
                let qq = q % 16.0;
                (DType::Q4_K, sc, if cancel { (sc * qq).min(63.0) } else { mn }, qq)
            }
            DecodeChain::Q5K => (DType::Q5_K, sc, if cancel { (sc * q).min(63.0) } else { mn }, q),
        };
        let got = decode_emulated(chain, [d, dmin], sc, mn, q, flush);
        let tiny = |v: &[f64]| v.iter().map(|x| x.abs()).filter(|&x| x > 0.0).fold(f64::INFINITY, f64::min);
        // The model's terms as tolerance::cm2_decode_terms forms them (x = p − m exactly; the
        // smallest and largest f16 intermediates of the chain).
        let t = match chain {
            DecodeChain::DQ => DecodeTerms { p: d * q, m: 0.0, tiny: tiny(&[d]), huge: 0.0 },
            DecodeChain::DScQ => DecodeTerms { p: d * sc * q, m: 0.0, tiny: tiny(&[d, d * sc]), huge: (d * sc).abs() },
            DecodeChain::DQPlusM { .. } => DecodeTerms { p: d * q, m: -dmin, tiny: tiny(&[d, d * q, dmin]), huge: (d * q).abs() },
            DecodeChain::Q2K => DecodeTerms {
                p: d * sc * q,
                m: dmin * mn,
                tiny: tiny(&[d, d * sc, dmin, dmin * mn]),
                huge: (d * sc).abs().max((d * sc * q).abs()).max((dmin * mn).abs()),
            },
            DecodeChain::Q5K => DecodeTerms {
                p: d * sc * q,
                m: dmin * mn,
                tiny: tiny(&[d, d * sc, dmin, dmin * mn]),
                huge: (d * sc).abs().max((dmin * mn).abs()),
            },
            DecodeChain::Q4K => DecodeTerms { p: d * sc * q, m: dmin * mn, tiny: tiny(&[d, dmin]), huge: 0.0 },
        };
        let exact = t.p - t.m;
        let (bound, may_overflow) = cm2_decode_error(dtype, &t);
        if !got.is_finite() {
            prop_assert!(may_overflow, "{chain:?} d {d:e} dmin {dmin:e} sc {sc} mn {mn} q {q}: {got} where the model says no overflow (exact {exact:e})");
        } else {
            let err = (got - exact).abs();
            prop_assert!(err <= bound, "{chain:?} d {d:e} dmin {dmin:e} sc {sc} mn {mn} q {q} flush {flush}: got {got:e} want {exact:e}, |err| {err:e} > bound {bound:e}");
        }
    }
}

/// The K-quant super-block mat-vec body with a min (mul_mat_vec_superblock.comp, q2_K/q4_K/
/// q5_K): invocation tid is thread t = tid mod 16 of super-blocks ⌊tid/16⌋, ⌊tid/16⌋ + lanes,
/// …, and takes the quads at 128⌊t/8⌋ + 4(t mod 8) + 32g (g = 0..3), each in its own
/// 16-element group. Per quad s_g = q·b (a product, then an fma chain) and sb_g = Σ b in
/// order; t_q = Σ_g (d·sc)_g·s_g and t_m = Σ_g (dmin·m)_g·sb_g (a product, then fmas), with the
/// scale products exact in f32; acc ← (acc − t_m) + t_q. `fused` false rounds every product
/// and add separately (Vulkan may or may not fuse). Then the tree.
fn kquant_mat_vec_emulated(
    groups: &[(f32, f32, [f32; 16])],
    b: &[f32],
    block_size: usize,
    fused: bool,
    pairing: u64,
) -> f32 {
    let fma = |x: f32, y: f32, z: f32| if fused { x.mul_add(y, z) } else { x * y + z };
    let lanes = (block_size / 16).max(1);
    let super_blocks = groups.len() / 16;
    let mut partial = vec![0.0f32; block_size.max(16)];
    for (tid, acc) in partial.iter_mut().enumerate() {
        let t = tid % 16;
        let mut sb = tid / 16;
        while sb < super_blocks {
            let (mut t_q, mut t_m) = (0.0f32, 0.0f32);
            for g in 0..4 {
                let first = 128 * (t / 8) + 4 * (t % 8) + 32 * g;
                let (dsc, dmm, q) = groups[sb * 16 + first / 16];
                let q = &q[first % 16..][..4];
                let bq = &b[sb * 256 + first..][..4];
                let s = (1..4).fold(q[0] * bq[0], |s, j| fma(q[j], bq[j], s));
                let s_b = bq[1..].iter().fold(bq[0], |s, &x| s + x);
                t_q = if g == 0 { dsc * s } else { fma(dsc, s, t_q) };
                t_m = if g == 0 {
                    dmm * s_b
                } else {
                    fma(dmm, s_b, t_m)
                };
            }
            *acc = (*acc - t_m) + t_q;
            sb += lanes;
        }
    }
    tree_sum(partial, pairing)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The K-quant mat-vec model (γ(mul_mat_vec_depth_of)·Σ(|d·sc·q| + |dmin·m|)·|b| + floor)
    /// covers the super-block body with a min, fused or not, any tree pairing, with scales and
    /// minimums drawn to cancel (d·sc·q ≈ dmin·m) as well as not.
    #[test]
    fn kquant_mat_vec_bound_covers_emulated_f32(
        (groups, b, block_size, fused, pairing) in (1usize..=4, prop_oneof![Just(16usize), Just(32), Just(64)])
            .prop_flat_map(|(super_blocks, bs)| {
                let scale = prop_oneof![1e-3f32..1.0, 1.0f32..100.0, Just(0.0f32)];
                let group = (scale.clone(), 0u32..64, scale, 0u32..64, prop::array::uniform16(0u32..16))
                    .prop_map(|(d, sc, dmin, m, q)| {
                        // d and dmin are f16 values in the block; the products are exact in f32.
                        let (d, dmin) = (half::f16::from_f32(d).to_f32(), half::f16::from_f32(dmin).to_f32());
                        (d * sc as f32, dmin * m as f32, q.map(|x| x as f32))
                    });
                let val = prop_oneof![-4.0f32..4.0, -1e3f32..1e3, -1e-3f32..1e-3];
                (
                    prop::collection::vec(group, super_blocks * 16),
                    prop::collection::vec(val, super_blocks * 256),
                    Just(bs),
                    any::<bool>(),
                    any::<u64>(),
                )
            })
    ) {
        let got = kquant_mat_vec_emulated(&groups, &b, block_size, fused, pairing);
        let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
        for (g, &(dsc, dmm, q)) in groups.iter().enumerate() {
            for (j, &qj) in q.iter().enumerate() {
                let x = b[g * 16 + j] as f64;
                exact += (dsc as f64 * qj as f64 - dmm as f64) * x;
                magnitude += ((dsc as f64 * qj as f64).abs() + (dmm as f64).abs()) * x.abs();
            }
        }
        let k = b.len();
        let bound = vkdiff::cases::mul_mat_vec::bounds::mul_mat_vec_bounds_of(
            &[magnitude], k, block_size as u32, vkdiff_reference::DType::Q4_K)[0];
        let err = (got as f64 - exact).abs();
        prop_assert!(err <= bound, "K={} BLOCK_SIZE={} fused {}: |{} - {}| = {:e} > {:e}", k, block_size, fused, got, exact, err, bound);
    }
}

/// A deterministic adversarial input for the K-quant body: every b just above 1 and every q at
/// 15, so the fmas of the q·b chains and the adds of the b sums round the same way. The error
/// reaches 0.017 of the bound (0.117 with the 16-element chains the body had before its quads;
/// random data stays far lower), so a model weakened to below about a sixtieth of itself fails
/// here; γ(depth) charges every rounding at the largest partial sum, which a growing chain
/// reaches only at its end, and the model's depth also covers upstream's longer chains.
#[test]
fn kquant_mat_vec_bound_covers_a_one_sided_rounding_chain() {
    let b = vec![1.0f32 + 5.0 * f32::EPSILON; 4 * 256];
    let groups = vec![(1.0f32, 0.0f32, [15.0f32; 16]); 4 * 16];
    let mut worst = 0.0f64;
    for (block_size, fused) in [(16, true), (16, false), (32, true), (64, false)] {
        let got = kquant_mat_vec_emulated(&groups, &b, block_size, fused, 7);
        let exact: f64 = b.iter().map(|&x| 15.0 * x as f64).sum();
        let bound = vkdiff::cases::mul_mat_vec::bounds::mul_mat_vec_bounds_of(
            &[exact],
            b.len(),
            block_size as u32,
            vkdiff_reference::DType::Q4_K,
        )[0];
        let err = (got as f64 - exact).abs();
        assert!(
            err <= bound,
            "BLOCK_SIZE={block_size} fused {fused}: |{got} - {exact}| = {err:e} > {bound:e}"
        );
        worst = worst.max(err / bound);
    }
    println!("worst error/bound {worst:.3}");
}

/// f32 subnormals flushed to zero where `flush` (Vulkan allows it for any operand or result).
fn flush32(x: f32, flush: bool) -> f32 {
    round_to(x, vkdiff::tolerance::Fp::F32, flush)
}

/// The element-wise nodes after a mat-vec in a fused decode graph
/// (`src/model/cases/mul_mat_vec/epilogue.rs`), emulated on the emulated mat-vec result in f32:
/// `nodes` is (true: add, false: multiply, operand) in graph order, every operand and result
/// flushed where `flush`. Fused or not, ggml does this arithmetic (the epilogue on the f32
/// accumulator, or the stored f32 result loaded by the next node's shader).
fn epilogue_emulated(x: f32, nodes: &[(bool, f32)], flush: bool) -> f32 {
    nodes.iter().fold(flush32(x, flush), |y, &(add, c)| {
        let c = flush32(c, flush);
        flush32(if add { y + c } else { y * c }, flush)
    })
}

/// The exact result and the composed bound of the same nodes, from the mat-vec's exact value and
/// bound.
fn epilogue_bound(exact: f64, bound: f64, nodes: &[(bool, f32)]) -> (f64, f64) {
    use vkdiff::cases::mul_mat_vec::epilogue::{add, mul};
    nodes.iter().fold((exact, bound), |(x, b), &(is_add, c)| {
        if is_add {
            add(x, b, c)
        } else {
            mul(x, b, c)
        }
    })
}

/// An operand of a node: ordinary, large, tiny, f32-subnormal or zero.
fn node_operand() -> impl Strategy<Value = f32> {
    prop_oneof![
        -4.0f32..4.0,
        -1e4f32..1e4,
        -1e-4f32..1e-4,
        -1e-38f32..1e-38,
        Just(0.0f32)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Fused decode graphs: the mat-vec bound carried through each node's f32 rounding covers
    /// MUL_MAT + ADD + ADD and MUL_MAT_ID + ADD_ID + MUL (and their prefixes), for any share
    /// order and tree pairing of the mat-vec, with and without flushed subnormals.
    #[test]
    fn fused_epilogue_bound_covers_each_node_rounded_in_f32(
        (a, b, block_size, perm, pairing) in (1usize..=200, prop_oneof![Just(1usize), Just(16), Just(32), Just(64)])
            .prop_flat_map(|(k, bs)| {
                let val = prop_oneof![-4.0f32..4.0, -1e4f32..1e4, -1e-4f32..1e-4];
                (
                    prop::collection::vec(val.clone(), k),
                    prop::collection::vec(val, k),
                    Just(bs),
                    Just((0..k).collect::<Vec<_>>()).prop_shuffle(),
                    any::<u64>(),
                )
            }),
        (c0, c1, w) in (node_operand(), node_operand(), node_operand()),
        graph in 0usize..4,
        flush in any::<bool>(),
    ) {
        let nodes: Vec<(bool, f32)> = match graph {
            0 => vec![(true, c0)],
            1 => vec![(true, c0), (true, c1)],
            2 => vec![(false, w)],
            _ => vec![(true, c0), (false, w)],
        };
        let k = a.len();
        let x = mat_vec_emulated(&a, &b, block_size, &perm, pairing);
        let got = epilogue_emulated(x, &nodes, flush);
        let exact: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
        let magnitude: f64 = a.iter().zip(&b).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
        let bound = vkdiff::cases::mul_mat_vec::bounds::mul_mat_vec_bounds(&[magnitude], k, block_size as u32, false)[0];
        let (want, bound) = epilogue_bound(exact, bound, &nodes);
        let err = (got as f64 - want).abs();
        prop_assert!(err <= bound, "K={} nodes {:?} flush {}: |{} - {}| = {:e} > {:e}", k, nodes, flush, got, want, err, bound);
    }
}

/// The nodes' own roundings are needed: a mat-vec result far below ulp(1) added to a bias of 1
/// is lost in the f32 add, an error the mat-vec bound alone (scaled by its tiny magnitude) does
/// not cover, and the composed bound does.
#[test]
fn fused_epilogue_bound_needs_the_add_s_rounding() {
    let (a, b) = ([1.0f32], [2f32.powi(-30)]);
    let x = mat_vec_emulated(&a, &b, 1, &[0], 0);
    let nodes = [(true, 1.0f32)];
    let got = epilogue_emulated(x, &nodes, false);
    let exact = 2f64.powi(-30);
    let mv = vkdiff::cases::mul_mat_vec::bounds::mul_mat_vec_bounds(&[exact], 1, 1, false)[0];
    let err = (got as f64 - (exact + 1.0)).abs();
    assert!(
        err > mv,
        "the mat-vec bound alone covers |err| = {err:e} ({mv:e})"
    );
    let (want, bound) = epilogue_bound(exact, mv, &nodes);
    assert_eq!(want, exact + 1.0);
    assert!(err <= bound, "|err| = {err:e} > composed bound {bound:e}");
}

/// ggml's tq2_0 mat-vec body (mul_mat_vec_tq2_0.comp in 0.1.161): thread t = tid mod 16 of
/// super-blocks ⌊tid/16⌋, ⌊tid/16⌋ + lanes, … takes elements 128⌊t/8⌋ + 2(t mod 8) + l + 16j
/// (l = 0, 1; j = 0 … 7); per l, sumq ← fma(b_j, q_j, …) nested from j = 7 in, sumb ← sumb +
/// (b_0 + … + b_7) left to right; then acc ← fma(d, sumq − sumb, acc). `codes` are the stored
/// codes 0 … 3 (x = d·(q − 1)). Then the tree.
fn tq2_0_mat_vec_emulated(
    d: &[f32],
    codes: &[u8],
    b: &[f32],
    block_size: usize,
    pairing: u64,
) -> f32 {
    let lanes = (block_size / 16).max(1);
    let mut partial = vec![0.0f32; block_size.max(16)];
    for (tid, acc) in partial.iter_mut().enumerate() {
        let t = tid % 16;
        let first = 128 * (t / 8) + 2 * (t % 8);
        let mut sb = tid / 16;
        while sb < d.len() {
            let (mut sumq, mut sumb) = (0.0f32, 0.0f32);
            for l in 0..2 {
                let e = |j: usize| sb * 256 + first + l + 16 * j;
                sumq = (0..8)
                    .rev()
                    .fold(sumq, |s, j| b[e(j)].mul_add(f32::from(codes[e(j)]), s));
                sumb += (1..8).fold(b[e(0)], |s, j| s + b[e(j)]);
            }
            *acc = d[sb].mul_add(sumq - sumb, *acc);
            sb += lanes;
        }
    }
    tree_sum(partial, pairing)
}

/// ggml's tq1_0 mat-vec body (mul_mat_vec_tq1_0.comp): invocation tid takes blocks ⌊tid/8⌋,
/// ⌊tid/8⌋ + BLOCK_SIZE/8, … and in each its bytes m ≡ tid (mod 8): every term d·(trit − 1)
/// (exact) times b added to its running sum in turn; `order` permutes a block's 256 elements
/// among the invocations' 34-term shares (any split into 8 shares of at most 34 terms each
/// reaches the same depth). Then the tree.
fn tq1_0_mat_vec_emulated(
    d: &[f32],
    trits: &[u8],
    b: &[f32],
    block_size: usize,
    order: &[usize],
    pairing: u64,
) -> f32 {
    let lanes = (block_size / 8).max(1);
    let mut partial = vec![0.0f32; block_size.max(8)];
    for (tid, acc) in partial.iter_mut().enumerate() {
        let mut blk = tid / 8;
        while blk < d.len() {
            for &i in order.iter().skip(tid % 8).step_by(8).take(34) {
                let e = blk * 256 + i;
                let x = d[blk] * (f32::from(trits[e]) - 1.0);
                *acc += x * b[e];
            }
            blk += lanes;
        }
    }
    tree_sum(partial, pairing)
}

/// f16 scales, codes below `levels`, and b values for `blocks` 256-element blocks.
fn ternary_inputs(levels: u8) -> impl Strategy<Value = (Vec<f32>, Vec<u8>, Vec<f32>, usize, u64)> {
    (1usize..=4, prop_oneof![Just(16usize), Just(32), Just(64)]).prop_flat_map(move |(n, bs)| {
        let d =
            prop_oneof![1e-3f32..1.0, 1.0f32..100.0].prop_map(|x| half::f16::from_f32(x).to_f32());
        let val = prop_oneof![-4.0f32..4.0, 1.0f32..1.001, -1e3f32..1e3];
        (
            prop::collection::vec(d, n),
            prop::collection::vec(0..levels, n * 256),
            prop::collection::vec(val, n * 256),
            Just(bs),
            any::<u64>(),
        )
    })
}

/// Exact value of Σ d·(q − 1)·b and the model's magnitude (`formats::magnitude_into`'s
/// formula: |d·q| + |d| per tq2_0 element, |x| per tq1_0 element, times |b|).
fn ternary_exact(dtype: vkdiff_reference::DType, d: &[f32], codes: &[u8], b: &[f32]) -> (f64, f64) {
    let mut exact = 0.0f64;
    for (e, (&q, &x)) in codes.iter().zip(b).enumerate() {
        exact += f64::from(d[e / 256]) * (f64::from(q) - 1.0) * f64::from(x);
    }
    // |d·q| + |d| for tq2_0 (its stored code), |x| otherwise.
    let mag: f64 = codes
        .iter()
        .zip(b)
        .enumerate()
        .map(|(e, (&q, &x))| {
            let d = f64::from(d[e / 256]).abs();
            let m = if dtype == vkdiff_reference::DType::Tq2_0 {
                d * f64::from(q) + d
            } else {
                d * (f64::from(q) - 1.0).abs()
            };
            m * f64::from(x).abs()
        })
        .sum();
    (exact, mag)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// tq2_0: the K-quant depth with two folds and magnitudes |d·q| + |d| cover ggml's body,
    /// whose Σ b·q and Σ b cancel where q = 1.
    #[test]
    fn tq2_0_mat_vec_bound_covers_emulated_f32((d, codes, b, bs, pairing) in ternary_inputs(4)) {
        let got = tq2_0_mat_vec_emulated(&d, &codes, &b, bs, pairing);
        let (exact, mag) = ternary_exact(vkdiff_reference::DType::Tq2_0, &d, &codes, &b);
        let bound = vkdiff::cases::mul_mat_vec::bounds::mul_mat_vec_bounds_of(
            &[mag], b.len(), bs as u32, vkdiff_reference::DType::Tq2_0)[0];
        let err = (got as f64 - exact).abs();
        prop_assert!(err <= bound, "K={} BLOCK_SIZE={}: {:e} > {:e}", b.len(), bs, err, bound);
    }

    /// tq1_0: 34 sequential terms per block and invocation, then the tree.
    #[test]
    fn tq1_0_mat_vec_bound_covers_emulated_f32(
        ((d, trits, b, bs, pairing), order) in (ternary_inputs(3), Just((0..256).collect::<Vec<usize>>()).prop_shuffle())
    ) {
        let got = tq1_0_mat_vec_emulated(&d, &trits, &b, bs, &order, pairing);
        let (exact, mag) = ternary_exact(vkdiff_reference::DType::Tq1_0, &d, &trits, &b);
        let bound = vkdiff::cases::mul_mat_vec::bounds::mul_mat_vec_bounds_of(
            &[mag], b.len(), bs as u32, vkdiff_reference::DType::Tq1_0)[0];
        let err = (got as f64 - exact).abs();
        prop_assert!(err <= bound, "K={} BLOCK_SIZE={}: {:e} > {:e}", b.len(), bs, err, bound);
    }
}

/// Why tq2_0's magnitudes count |d| beside |d·(q − 1)|: with every code 1 every value is 0, yet
/// ggml's body forms Σ b·1 and Σ b in different orders and returns their rounded difference;
/// a bound scaled by |x| alone (0) is then broken, the one the model uses is not.
#[test]
fn tq2_0_needs_the_offset_in_its_magnitudes() {
    let n = 4;
    let b: Vec<f32> = (0..n * 256).map(|i| 1.0 + (i % 7) as f32 * 0.1).collect();
    let (d, codes) = (vec![0.75f32; n], vec![1u8; n * 256]);
    let got = tq2_0_mat_vec_emulated(&d, &codes, &b, 16, 3);
    let (exact, mag) = ternary_exact(vkdiff_reference::DType::Tq2_0, &d, &codes, &b);
    assert_eq!(exact, 0.0);
    let bound = |m: f64| {
        vkdiff::cases::mul_mat_vec::bounds::mul_mat_vec_bounds_of(
            &[m],
            b.len(),
            16,
            vkdiff_reference::DType::Tq2_0,
        )[0]
    };
    let err = (got as f64).abs();
    assert!(err > bound(0.0), "{err:e} within the floor alone");
    assert!(err <= bound(mag), "{err:e} > {:e}", bound(mag));
}
