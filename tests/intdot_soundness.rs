//! The integer-dot error model (`vkdiff::cases::intdot`) checked by emulation: ggml's
//! integer-dot arithmetic redone on the CPU in f32 the ways a device may do it (B quantized to
//! q8_1 with the scale and its inverse off by up to two ulps, halfway cases rounded either way;
//! exact integer block dots; the per-piece f32 scaling with and without fused multiply-adds;
//! pieces summed as MMVQ's invocations and reduction tree or MMQ's per-thread chain and splits
//! sum them), over random shapes and every A type with an integer-dot body. The emulated result
//! must always lie within the model's bound of its centre; and a device that gets a block
//! wrong (its scale, its stored sum, a quant that is no tie, the block's position) must fail.
//!
//! The emulation is the model's piece structure (each piece d₁₆·Σ(a_i + c)·q_i − c·s, or with
//! q2_K's per-16 minimum summed by integer dots), not each per-type shader body; the per-type
//! bodies' extra roundings are what the model's piece depths count.

use half::f16;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vkdiff::cases::data::{tensor, values, Blocks, Dist, Scales};
use vkdiff::cases::intdot::{
    int_dot_element, int_dot_types, mmvq_k_per_iter, offset_coefs, quantize_q8_1, uses_stored_sum,
    IntDotPath, IntDotPlan, QK8_1,
};
use vkdiff_reference::DType;

/// How the emulated device differs from vkdiff's quantization, and what it gets wrong.
#[derive(Debug, Clone, Copy)]
struct Device {
    /// ulps added to d = amax/127 (Vulkan division is 2.5 ulp).
    d_ulps: i32,
    /// ulps added to 1/d.
    inv_ulps: i32,
    /// Halfway cases to even instead of away from zero.
    ties_even: bool,
    /// Fused multiply-adds in the pieces.
    fused: bool,
    /// q4_0 and q5_0 in the order of ggml's bodies, da·(Σ·d − k·s) (others as the generic
    /// piece).
    ggml_order: bool,
    /// A fault, for the negative tests.
    fault: Fault,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
enum Fault {
    #[default]
    None,
    /// Every block's f16 scale one f16 ulp too large (a scale rounded the wrong way).
    Scale,
    /// Every block's stored sum 2⁻⁶ relatively off.
    Sum,
    /// One quant of block 0 off by one (and the block's sum with it), at the element with the
    /// largest |a| that is no tie.
    Quant(usize),
    /// A's block j multiplied with B's block j + 1 (B's last block with block 0).
    Shifted,
}

fn ulps(x: f32, n: i32) -> f32 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    f32::from_bits((x.to_bits() as i64 + n as i64) as u32)
}

/// B quantized by the emulated device: (d₁₆, s₁₆, quants) per block.
fn device_quantize(x: &[f32], dev: Device) -> Vec<(f32, f32, [i8; 32])> {
    x.chunks_exact(QK8_1)
        .enumerate()
        .map(|(j, x)| {
            let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let d = ulps(amax / 127.0, dev.d_ulps);
            let d_inv = if d != 0.0 {
                ulps(1.0 / d, dev.inv_ulps)
            } else {
                0.0
            };
            let mut q = [0i8; 32];
            let mut sum = 0.0f32;
            for (i, &v) in x.iter().enumerate() {
                let t = v * d_inv;
                let r = if dev.ties_even {
                    t.round_ties_even()
                } else {
                    t.round()
                };
                q[i] = r.clamp(-127.0, 127.0) as i8;
                // The quantize shader flips one quant; its sum follows.
                if dev.fault == Fault::Quant(i) && j == 0 {
                    q[i] = if q[i] < 127 { q[i] + 1 } else { q[i] - 1 };
                }
                sum += q[i] as f32;
            }
            (
                f16::from_f32(d).to_f32(),
                f16::from_f32(sum * d).to_f32(),
                q,
            )
        })
        .collect()
}

/// q2_K's minimum coefficient dmin·m per 16 elements of a row.
fn q2k_mins(row: &[u8]) -> Vec<f64> {
    row.chunks_exact(DType::Q2_K.block_bytes())
        .flat_map(|b| {
            let dmin = f16::from_le_bytes([b[82], b[83]]).to_f64();
            (0..16).map(move |j| dmin * f64::from(b[j] >> 4))
        })
        .collect()
}

/// The pieces of one output, in K order: each f32 as the body forms it.
fn pieces(
    a_type: DType,
    a: &[f64],
    row: &[u8],
    qb: &[(f32, f32, [i8; 32])],
    piece_len: usize,
    dev: Device,
) -> Vec<f32> {
    let c = offset_coefs(a_type, row);
    let q2k = (a_type == DType::Q2_K).then(|| q2k_mins(row));
    let sum_used = uses_stored_sum(a_type);
    let nblocks = a.len() / QK8_1;
    let mut out = Vec::new();
    for (j, &c_j) in c.iter().enumerate().take(nblocks) {
        let jb = if dev.fault == Fault::Shifted {
            (j + 1) % nblocks
        } else {
            j
        };
        let (mut d, mut s, q) = qb[jb];
        match dev.fault {
            Fault::Scale if d != 0.0 => d = f16::from_bits(f16::from_f32(d).to_bits() + 1).to_f32(),
            Fault::Sum => s *= 1.0 + 1.0 / 64.0,
            _ => {}
        }
        for p in (0..QK8_1).step_by(piece_len) {
            let idx = j * QK8_1 + p..j * QK8_1 + p + piece_len;
            let qs = &q[p..p + piece_len];
            let piece = if let Some(mins) = &q2k {
                // ds.x·(Σ(a + c)·q − Σ c·q): both sums by integer dots, then scaled.
                let mut sd = 0.0f64;
                let mut sm = 0.0f64;
                for (i, &qq) in idx.clone().zip(qs) {
                    let m = mins[i / 16];
                    sd += (a[i] + m) * f64::from(qq);
                    sm += m * f64::from(qq);
                }
                d * ((sd as f32) - (sm as f32))
            } else {
                let cj = if sum_used { c_j } else { 0.0 };
                let v: f64 = idx
                    .clone()
                    .zip(qs)
                    .map(|(i, &qq)| (a[i] + cj) * f64::from(qq))
                    .sum();
                let share = s * (piece_len as f32 / QK8_1 as f32);
                let off = (cj as f32) * share;
                if dev.ggml_order
                    && matches!(a_type, DType::Q4_0 | DType::Q5_0 | DType::Q2_0)
                    && cj != 0.0
                {
                    // c = 8·da (q4_0), 16·da (q5_0) or da (q2_0); Σ p·q = v/da exactly.
                    let k = match a_type {
                        DType::Q4_0 => 8.0,
                        DType::Q5_0 => 16.0,
                        _ => 1.0,
                    };
                    let da = cj / k;
                    let q_sum = (v / da) as f32;
                    let share = k as f32 * piece_len as f32 / QK8_1 as f32;
                    (da as f32) * (q_sum * d - share * s)
                } else if !sum_used {
                    (v as f32) * d
                } else if dev.fused {
                    (v as f32).mul_add(d, -off)
                } else {
                    (v as f32) * d - off
                }
            };
            out.push(piece);
        }
    }
    out
}

/// MMVQ: piece p goes to invocation p mod bs, each folds its pieces in order, then a pairwise
/// tree over the invocations.
fn mmvq_sum(pieces: &[f32], bs: usize) -> f32 {
    let mut partial = vec![0.0f32; bs];
    for (p, &x) in pieces.iter().enumerate() {
        partial[p % bs] += x;
    }
    while partial.len() > 1 {
        partial = partial.chunks(2).map(|c| c.iter().sum::<f32>()).collect();
    }
    partial[0]
}

/// MMQ: each split sums its blocks' pieces in order; the splits are added in order.
fn mmq_sum(pieces: &[f32], splits: usize) -> f32 {
    let per = pieces.len().div_ceil(splits.max(1));
    pieces
        .chunks(per.max(1))
        .map(|c| c.iter().fold(0.0f32, |s, &x| s + x))
        .fold(0.0f32, |s, x| s + x)
}

/// The types of the July 2025 tree's MMQ.
const LEGACY: [DType; 5] = [
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
    DType::Q8_0,
];

struct Case {
    a_type: DType,
    a: Vec<f64>,
    row: Vec<u8>,
    b: Vec<f32>,
}

fn case(a_type: DType, rng: &mut ChaCha8Rng, seed: u64) -> Case {
    let blocks = if a_type.block_len() >= 256 {
        rng.gen_range(1..=6)
    } else {
        rng.gen_range(1..=40)
    };
    let k = blocks * a_type.block_len();
    let a_blocks = [
        Blocks::Quantized(Dist::Normal),
        Blocks::Raw(Scales::Random),
        Blocks::Raw(Scales::SomeZero),
    ][rng.gen_range(0..3)];
    let t = tensor(a_type, [k, 1, 1, 1], a_blocks, seed, 0);
    let dist = [
        Dist::Normal,
        Dist::Uniform,
        Dist::Positive,
        Dist::Large,
        Dist::SparseZeros,
    ][rng.gen_range(0..5)];
    Case {
        a_type,
        a: t.rows().unwrap(),
        row: t.data().to_vec(),
        b: values(dist, seed, 1, k),
    }
}

/// The worst |emulated − centre|/bound over the devices and orders of one case and path; NaN
/// where the model leaves the output unjudged (a block beyond f16's range).
fn worst_ratio(c: &Case, path: IntDotPath, fault: Fault) -> f64 {
    worst_ratio_on(c, path, fault, &DEVICES)
}

/// The emulated devices: vkdiff's own quantization, and three that round d, 1/d and halfway
/// cases otherwise (one with fused pieces, one in ggml's own order for q4_0 and q5_0).
const DEVICES: [Device; 4] = [
    Device {
        d_ulps: 0,
        inv_ulps: 0,
        ties_even: false,
        fused: false,
        ggml_order: false,
        fault: Fault::None,
    },
    Device {
        d_ulps: 2,
        inv_ulps: -2,
        ties_even: true,
        fused: false,
        ggml_order: false,
        fault: Fault::None,
    },
    Device {
        d_ulps: -2,
        inv_ulps: 2,
        ties_even: false,
        fused: true,
        ggml_order: false,
        fault: Fault::None,
    },
    Device {
        d_ulps: 1,
        inv_ulps: 1,
        ties_even: false,
        fused: false,
        ggml_order: true,
        fault: Fault::None,
    },
];

fn worst_ratio_on(c: &Case, path: IntDotPath, fault: Fault, devices: &[Device]) -> f64 {
    let model_b = quantize_q8_1(&c.b);
    let coefs = offset_coefs(c.a_type, &c.row);
    let k = c.a.len();
    let mut worst = 0.0f64;
    for &dev in devices {
        let dev = Device { fault, ..dev };
        let qb = device_quantize(&c.b, dev);
        match path {
            IntDotPath::Mmvq => {
                let kpi = mmvq_k_per_iter(c.a_type);
                let p = pieces(c.a_type, &c.a, &c.row, &qb, kpi, dev);
                for sg in [4u32, 8, 32] {
                    let plan = IntDotPlan::mmvq(c.a_type, k, sg);
                    let sum_used = uses_stored_sum(c.a_type);
                    let (centre, bound) = int_dot_element(&c.a, &coefs, &model_b, sum_used, &plan);
                    for bs in [sg as usize, 4 * sg as usize] {
                        let got = f64::from(mmvq_sum(&p, bs));
                        worst = worst.max((got - centre).abs() / bound);
                    }
                    if bound.is_nan() {
                        return f64::NAN;
                    }
                }
            }
            IntDotPath::Mmq => {
                let p = pieces(c.a_type, &c.a, &c.row, &qb, QK8_1, dev);
                let sum_used = uses_stored_sum(c.a_type);
                for splits in [1usize, 3] {
                    let per = k.div_ceil(splits);
                    let plan = IntDotPlan::mmq(c.a_type, &[(splits, per)], false, false);
                    let (centre, bound) = int_dot_element(&c.a, &coefs, &model_b, sum_used, &plan);
                    let got = f64::from(mmq_sum(&p, splits));
                    if bound.is_nan() {
                        return f64::NAN;
                    }
                    worst = worst.max((got - centre).abs() / bound);
                }
                // The July 2025 tree's f16 accumulators (legacy types): each piece rounded to
                // f16, summed in f16. Outputs beyond f16's range are unjudged there.
                if LEGACY.contains(&c.a_type) {
                    let plan = IntDotPlan::mmq(c.a_type, &[(1, k)], true, true);
                    let (centre, bound) = int_dot_element(&c.a, &coefs, &model_b, sum_used, &plan);
                    if !bound.is_nan() {
                        let got = p.iter().fold(f16::ZERO, |acc, &x| {
                            f16::from_f32(acc.to_f32() + f16::from_f32(x).to_f32())
                        });
                        worst = worst.max((got.to_f64() - centre).abs() / bound);
                    }
                }
            }
        }
    }
    worst
}

const CASES: u64 = 300;

#[test]
fn the_emulated_integer_dot_paths_pass_the_bound() {
    for path in [IntDotPath::Mmvq, IntDotPath::Mmq] {
        for &a_type in int_dot_types(path) {
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let (mut worst, mut rounding_only, mut unjudged) = (0.0f64, 0.0f64, 0);
            for seed in 0..CASES {
                let c = case(a_type, &mut rng, seed);
                let r = worst_ratio(&c, path, Fault::None);
                if r.is_nan() {
                    unjudged += 1;
                    continue;
                }
                assert!(r <= 1.0, "{path:?} {a_type} seed {seed}: error/bound {r}");
                worst = worst.max(r);
                // vkdiff's own quantization: no tie flips, the f32 arithmetic alone.
                rounding_only =
                    rounding_only.max(worst_ratio_on(&c, path, Fault::None, &DEVICES[..1]));
            }
            assert!(
                unjudged < CASES / 10,
                "{path:?} {a_type}: {unjudged} unjudged"
            );
            println!(
                "{path:?} {a_type}: worst error/bound {worst:.3} ({rounding_only:.4} without tie flips) over {CASES} cases ({unjudged} unjudged)"
            );
        }
    }
}

/// Over the same cases, a device with `fault` must fail the bound in at least `share` of them
/// (a fault in a block of small values can hide under the bound of a large one).
fn fails_mostly(fault: impl Fn(&Case) -> Option<Fault>, share: f64, types: &[DType]) {
    for path in [IntDotPath::Mmvq, IntDotPath::Mmq] {
        for &a_type in int_dot_types(path).iter().filter(|t| types.contains(t)) {
            let mut rng = ChaCha8Rng::seed_from_u64(11);
            let (mut failed, mut tried) = (0, 0);
            for seed in 0..CASES {
                let c = case(a_type, &mut rng, seed);
                let Some(f) = fault(&c) else { continue };
                tried += 1;
                // A NaN (unjudged) counts as not failed.
                if worst_ratio(&c, path, f) > 1.0 {
                    failed += 1;
                }
            }
            let got = failed as f64 / tried.max(1) as f64;
            assert!(
                tried > CASES / 2 && got >= share,
                "{path:?} {a_type}: {failed} of {tried} faulty devices failed"
            );
        }
    }
}

/// Whether block 0 of A and B carries enough of the output for a fault there to show: A's
/// block 0 not all zero, B's not all zero.
fn block0_live(c: &Case) -> bool {
    c.a[..QK8_1].iter().any(|&x| x != 0.0) && c.b[..QK8_1].iter().any(|&x| x != 0.0)
}

#[test]
fn a_wrong_scale_fails() {
    // One f16 ulp on d is a relative 2⁻¹⁰ on every block: far above γ(depth).
    let all: Vec<DType> = DType::ALL.to_vec();
    fails_mostly(|c| block0_live(c).then_some(Fault::Scale), 0.9, &all);
}

#[test]
fn a_flipped_quant_that_is_no_tie_fails() {
    let all: Vec<DType> = DType::ALL.to_vec();
    fails_mostly(
        |c| {
            let b = &quantize_q8_1(&c.b)[0];
            // The element of block 0 with the largest |a| whose quant is no tie.
            let i = (0..QK8_1)
                .filter(|&i| b.latitude[i] == 0)
                .max_by(|&x, &y| c.a[x].abs().total_cmp(&c.a[y].abs()))?;
            (c.a[i] != 0.0 && b.d != 0.0).then_some(Fault::Quant(i))
        },
        // One element's |a|·d among up to 1,536 may hide under the rounding bound of the rest.
        0.8,
        &all,
    );
}

#[test]
fn a_wrong_stored_sum_fails() {
    // Only the bodies that use s can see it.
    let with_sum: Vec<DType> = DType::ALL
        .iter()
        .copied()
        .filter(|&t| uses_stored_sum(t))
        .collect();
    fails_mostly(
        |c| {
            let b = &quantize_q8_1(&c.b)[0];
            let coef = offset_coefs(c.a_type, &c.row)[0];
            (b.sum_q.abs() >= 64 && coef != 0.0).then_some(Fault::Sum)
        },
        0.9,
        &with_sum,
    );
}

#[test]
fn an_off_by_one_block_fails() {
    let all: Vec<DType> = DType::ALL.to_vec();
    fails_mostly(
        |c| (c.a.len() >= 2 * QK8_1).then_some(Fault::Shifted),
        0.9,
        &all,
    );
}

/// A ggml host on an integer-dot device, emulated: MUL_MAT and MUL_MAT_ID (dense A, any
/// token count) run as the emulated MMVQ with workgroups of 8 (the model takes the subgroup
/// size 8 and 32).
struct EmulatedHost {
    caps: vkdiff_gpu::DeviceCaps,
    fault: Fault,
}

impl vkdiff::model::driver::Driver for EmulatedHost {
    fn caps(&self) -> &vkdiff_gpu::DeviceCaps {
        &self.caps
    }

    fn latitude(&self) -> vkdiff::model::driver::Latitude {
        vkdiff::model::driver::Latitude::REAL_HOST
    }

    fn run_once(
        &mut self,
        op: &vkdiff::model::driver::GraphOp,
        _own: &mut vkdiff::model::driver::OwnRun<'_>,
    ) -> Result<vkdiff_gpu::runners::KernelRun, vkdiff::cases::Outcome> {
        use vkdiff::model::driver::GraphOp;
        let (a, b, ids) = match op {
            GraphOp::MulMat { a, b, .. } => (a, b, None),
            GraphOp::MulMatId { a, b, ids, .. } => (
                a,
                b,
                Some((
                    ids.rows().unwrap(),
                    vkdiff_reference::tensor::Tensor::ne(ids)[0],
                )),
            ),
            _ => panic!("only MUL_MAT and MUL_MAT_ID"),
        };
        let [k, m, _, _] = vkdiff_reference::tensor::Tensor::ne(a);
        let a_rows = a.rows().unwrap();
        let b_rows = b.rows().unwrap();
        let dev = Device {
            fault: self.fault,
            ..DEVICES[0]
        };
        // (first A row, B row) per dst column: MUL_MAT's columns in order; MUL_MAT_ID's slot e
        // of token t takes expert ids[t][e] and b's row e mod ne11 of token t.
        let columns: Vec<(usize, usize)> = match &ids {
            None => (0..b_rows.len() / k).map(|c| (0, c)).collect(),
            Some((ids, n_used)) => {
                let ne11 = vkdiff_reference::tensor::Tensor::ne(b)[1];
                ids.iter()
                    .enumerate()
                    .map(|(c, &id)| {
                        let (t, e) = (c / n_used, c % n_used);
                        (id as usize * m, t * ne11 + e % ne11)
                    })
                    .collect()
            }
        };
        let mut values = Vec::new();
        for (first, b_row) in columns {
            let x: Vec<f32> = b_rows[b_row * k..(b_row + 1) * k]
                .iter()
                .map(|&v| v as f32)
                .collect();
            let qb = device_quantize(&x, dev);
            for i in first..first + m {
                let bytes = a.dtype().row_bytes(k).unwrap();
                let row = &a.data()[i * bytes..(i + 1) * bytes];
                let p = pieces(
                    a.dtype(),
                    &a_rows[i * k..(i + 1) * k],
                    row,
                    &qb,
                    mmvq_k_per_iter(a.dtype()),
                    dev,
                );
                values.push(mmvq_sum(&p, 8));
            }
        }
        Ok(vkdiff_gpu::runners::KernelRun {
            values,
            overrun: false,
            gpu_ns: None,
            variant: "emulated mmvq".into(),
            validation: Vec::new(),
        })
    }
}

/// `case` judged on the emulated host with `caps` and `fault`.
fn judge_emulated(
    case: vkdiff::cases::Case,
    caps: vkdiff_gpu::DeviceCaps,
    fault: Fault,
) -> vkdiff::cases::Outcome {
    let mut host = EmulatedHost { caps, fault };
    let mut ctx = vkdiff::model::driver::Ctx {
        driver: &mut host,
        repeat: false,
    };
    case.evaluate(&mut ctx)
}

/// On the emulated host: `case` passes with integer dot, fails with `fault`, and fails
/// without integer dot (the float path's bound rejects B's quantization error).
fn assert_judged_by_the_candidate(
    case: vkdiff::cases::Case,
    caps: vkdiff_gpu::DeviceCaps,
    fault: Fault,
    label: &str,
) {
    use vkdiff::cases::Outcome;
    let judge = |fault, integer_dot| {
        let caps = vkdiff_gpu::DeviceCaps {
            integer_dot,
            ..caps.clone()
        };
        judge_emulated(case.clone(), caps, fault)
    };
    let ok = judge(Fault::None, true);
    assert!(matches!(ok, Outcome::Pass { .. }), "{label}: {ok:?}");
    let bad = judge(fault, true);
    assert!(matches!(bad, Outcome::Fail { .. }), "{label}: {bad:?}");
    let float_only = judge(Fault::None, false);
    assert!(
        matches!(float_only, Outcome::Fail { .. }),
        "{label}: {float_only:?}"
    );
}

#[test]
fn the_mat_vec_case_judges_an_emulated_mmvq_host() {
    use vkdiff::cases::mul_mat_vec::MulMatVecCase;
    let caps = vkdiff_gpu::DeviceCaps {
        integer_dot: true,
        subgroup_size: 8,
        ..Default::default()
    };
    for a_type in [
        DType::Q4_0,
        DType::Q4_1,
        DType::Q8_0,
        DType::Q4_K,
        DType::Q6_K,
        DType::Iq1S,
    ] {
        for seed in 0..4 {
            let case = MulMatVecCase {
                a_type,
                b_type: DType::F32,
                k: 4 * a_type.block_len(),
                m: 9,
                n: 3,
                ne02: 1,
                r2: 1,
                ne03: 1,
                b_row_pad: 0,
                a_blocks: Blocks::Quantized(Dist::Normal),
                b_dist: Dist::Normal,
                seed,
                epilogue: Default::default(),
                a_layout: Default::default(),
            };
            assert_judged_by_the_candidate(
                vkdiff::cases::Case::MulMatVec(case),
                caps.clone(),
                Fault::Scale,
                &format!("{a_type} seed {seed}"),
            );
        }
    }
}

#[test]
fn the_mat_vec_id_case_judges_an_emulated_mmvq_host() {
    use vkdiff::cases::mul_mat_vec_id::{MulMatVecIdCase, Routing};
    use vkdiff::cases::Outcome;
    for a_type in [DType::Q4_1, DType::Q8_0, DType::Q5_K] {
        for (seed, routing) in [
            (0, Routing::Distinct),
            (1, Routing::Repeated),
            (2, Routing::AllToOne),
        ] {
            let case = MulMatVecIdCase {
                a_type,
                k: 2 * a_type.block_len(),
                m: 7,
                n_as: 4,
                n_used: 4,
                ne11: 2,
                routing,
                b_row_pad: 0,
                a_blocks: Blocks::Quantized(Dist::Normal),
                b_dist: Dist::Normal,
                seed,
                epilogue: Default::default(),
            };
            let judge = |fault| {
                let caps = vkdiff_gpu::DeviceCaps {
                    integer_dot: true,
                    subgroup_size: 8,
                    ..Default::default()
                };
                judge_emulated(vkdiff::cases::Case::MulMatVecId(case.clone()), caps, fault)
            };
            let ok = judge(Fault::None);
            assert!(
                matches!(ok, Outcome::Pass { .. }),
                "{a_type} {routing:?}: {ok:?}"
            );
            let bad = judge(Fault::Shifted);
            assert!(
                matches!(bad, Outcome::Fail { .. }),
                "{a_type} {routing:?}: {bad:?}"
            );
        }
    }
}

/// A MUL_MAT_ID of up to 8 tokens on a later host goes to the mat-vec ID kernel, which takes
/// MMVQ on an integer-dot device whatever matmul family the case names (seen on the H100: a cm2
/// row's 2-token case ran `mul_mat_vec_id_iq4_xs_q8_1_f32`). The cm2 rows have no MMQ
/// candidate, so only the MMVQ one can pass them.
#[test]
fn the_mat_mat_id_case_judges_an_emulated_mmvq_host_at_few_tokens() {
    use vkdiff::cases::mul_mat_vec_id::Routing;
    use vkdiff::cases::mul_mm_id::MulMmIdCase;
    use vkdiff_gpu::runners::mul_mm::Prec;
    for a_type in [DType::Q4_0, DType::Q8_0, DType::Q4_K] {
        for (seed, n_tokens) in [(0, 2), (1, 5), (2, 8)] {
            let case = MulMmIdCase {
                a_type,
                b_type: DType::F32,
                k: 2 * a_type.block_len(),
                m: 9,
                n_as: 3,
                n_used: 2,
                ne11: 2,
                n_tokens,
                routing: Routing::Distinct,
                b_row_pad: 0,
                b_batch_pad: 0,
                prec: Prec::F32,
                a_blocks: Blocks::Quantized(Dist::Normal),
                b_dist: Dist::Normal,
                seed,
                cm2: true,
                cm1: false,
            };
            assert_judged_by_the_candidate(
                vkdiff::cases::Case::MulMmId(case),
                vkdiff::cases::model_devices::h100(),
                Fault::Shifted,
                &format!("{a_type} {n_tokens}"),
            );
        }
    }
}
