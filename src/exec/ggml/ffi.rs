//! ggml's public C API, loaded at run time from a build (libloading), and one single-op graph
//! run through it. Only functions whose signatures are the same at the pinned July 2025
//! revision and today's are used (ggml-host.md §1); enum values that moved between them
//! (ggml_op) are never passed.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::sync::Mutex;

use libloading::os::unix::{Library, Symbol, RTLD_GLOBAL, RTLD_NOW};
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use crate::model::driver::GraphOp;

type P = *mut c_void;

#[repr(C)]
struct InitParams {
    mem_size: usize,
    mem_buffer: P,
    no_alloc: bool,
}

/// `struct ggml_tensor`'s op_params start at this byte offset (type, buffer, ne[4], nb[4], op:
/// 4 + 4 padding + 8 + 32 + 32 + 4); the layout is the same at both revisions.
const OP_PARAMS_OFFSET: usize = 84;
/// `GGML_PREC_F32`.
const PREC_F32: c_int = 10;

/// ggml's type number for a vkdiff type (stable across revisions).
fn type_id(t: DType) -> c_int {
    match t {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::Q4_0 => 2,
        DType::Q4_1 => 3,
        DType::Q5_0 => 6,
        DType::Q5_1 => 7,
        DType::Q8_0 => 8,
        DType::Q8_1 => 9,
        DType::Q2_K => 10,
        DType::Q3_K => 11,
        DType::Q4_K => 12,
        DType::Q5_K => 13,
        DType::Q6_K => 14,
        DType::Iq2Xxs => 16,
        DType::Iq2Xs => 17,
        DType::Iq3Xxs => 18,
        DType::Iq1S => 19,
        DType::Iq4Nl => 20,
        DType::Iq3S => 21,
        DType::Iq2S => 22,
        DType::Iq4Xs => 23,
        DType::Iq1M => 29,
        DType::I32 => 26,
        DType::Bf16 => 30,
    }
}

/// What ggml logged (its device line, warnings), for reports and crash messages.
static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

extern "C" fn log_callback(_level: c_int, text: *const c_char, _ud: P) {
    if text.is_null() {
        return;
    }
    let s = unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned();
    eprint!("{s}");
    let mut log = LOG.lock().unwrap_or_else(|p| p.into_inner());
    if log.len() < 10_000 {
        log.push(s);
    }
}

/// Everything ggml logged so far, joined.
pub fn logged() -> String {
    LOG.lock().unwrap_or_else(|p| p.into_inner()).concat()
}

macro_rules! api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The loaded functions.
        #[allow(non_snake_case)]
        struct Api { $($name: Symbol<unsafe extern "C" fn($($arg),*) $(-> $ret)?>,)* }
        impl Api {
            fn load(libs: &[Library]) -> Result<Api, String> {
                Ok(Api { $($name: find(libs, stringify!($name))?,)* })
            }
        }
    };
}

fn find<T>(libs: &[Library], name: &str) -> Result<Symbol<T>, String> {
    for lib in libs {
        if let Ok(s) = unsafe { lib.get::<T>(name.as_bytes()) } {
            return Ok(s);
        }
    }
    Err(format!("the ggml build exports no {name}"))
}

api! {
    ggml_log_set: fn(extern "C" fn(c_int, *const c_char, P), P);
    ggml_backend_vk_get_device_count: fn() -> c_int;
    ggml_backend_vk_get_device_description: fn(c_int, *mut c_char, usize);
    ggml_backend_vk_init: fn(usize) -> P;
    ggml_backend_free: fn(P);
    ggml_backend_supports_op: fn(P, P) -> bool;
    ggml_tensor_overhead: fn() -> usize;
    ggml_graph_overhead: fn() -> usize;
    ggml_init: fn(InitParams) -> P;
    ggml_free: fn(P);
    ggml_new_tensor_4d: fn(P, c_int, i64, i64, i64, i64) -> P;
    ggml_new_tensor_1d: fn(P, c_int, i64) -> P;
    ggml_view_4d: fn(P, P, i64, i64, i64, i64, usize, usize, usize, usize) -> P;
    ggml_nbytes: fn(P) -> usize;
    ggml_mul_mat: fn(P, P, P) -> P;
    ggml_mul_mat_set_prec: fn(P, c_int);
    ggml_mul_mat_id: fn(P, P, P, P) -> P;
    ggml_flash_attn_ext: fn(P, P, P, P, P, f32, f32, f32) -> P;
    ggml_flash_attn_ext_set_prec: fn(P, c_int);
    ggml_rwkv_wkv7: fn(P, P, P, P, P, P, P, P) -> P;
    ggml_backend_alloc_ctx_tensors: fn(P, P) -> P;
    ggml_backend_buffer_clear: fn(P, u8);
    ggml_backend_buffer_free: fn(P);
    ggml_backend_tensor_set: fn(P, *const c_void, usize, usize);
    ggml_backend_tensor_get: fn(P, *mut c_void, usize, usize);
    ggml_new_graph: fn(P) -> P;
    ggml_build_forward_expand: fn(P, P);
    ggml_backend_graph_compute: fn(P, P) -> c_int;
}

/// A loaded ggml build with a Vulkan backend on one device.
pub struct Ggml {
    api: Api,
    /// `ggml_flash_attn_ext_add_sinks(a, sinks)`, where the build has it (ggml added sinks after
    /// the pinned July 2025 revision).
    add_sinks: Option<Symbol<unsafe extern "C" fn(P, P)>>,
    backend: P,
    /// ggml's description of the device.
    pub description: String,
    _libs: Vec<Library>,
}

/// The result of one graph.
pub struct GraphRun {
    /// dst in ggml order.
    pub values: Vec<f32>,
    /// The guard tensor allocated right after dst was changed.
    pub overrun: bool,
    /// With timing asked: the median wall time of one `ggml_backend_graph_compute` in ns.
    pub compute_ns: Option<f64>,
}

/// Timing of a graph (`vkdiff bench --ggml`): untimed computes, then timed ones.
#[derive(Clone)]
pub struct Timing {
    /// Untimed computes after the judged one.
    pub warmup: u32,
    /// Timed computes; the median is kept.
    pub repeats: u32,
    /// The bench's heater, paused for the warmup and timed computes only, as for vkdiff's own
    /// timed jobs. Paused for the whole case (inputs, reference, uploads: seconds of host work
    /// on the large rows) the GPU clocked down and ggml's computes ran up to 4x slower in the
    /// first rounds of a row (H100, 2026-12-06).
    pub heater: Option<std::sync::Arc<vkdiff_gpu::heat::Heater>>,
}

/// Why a graph gave no result.
pub enum Refusal {
    /// The backend does not run it (supports_op false, too large): a skip.
    Unsupported(String),
    /// An error ggml returned rather than aborting.
    Error(String),
}

/// Guard elements after dst (f32).
const GUARD: usize = 1024;
/// The guard's and dst's fill: a quiet NaN with a payload no kernel computes.
const POISON: u32 = 0x7fc0_dead;

impl Ggml {
    /// Loads the build in `lib_dir` and opens ggml Vulkan device 0 (the caller sets
    /// GGML_VK_VISIBLE_DEVICES and the path switches before this, once per process).
    pub fn open(lib_dir: &Path) -> Result<Ggml, String> {
        // Its dependencies (libggml-base) come through the build's RUNPATH, and dlsym on this
        // handle searches them too. A flat folder of carried libraries (ci/gpu.sh stage) has no
        // usable RUNPATH: its libggml-base is loaded first, which satisfies the dependency by
        // its soname.
        let mut libs = Vec::new();
        let mut base: Vec<_> = std::fs::read_dir(lib_dir)
            .map_err(|e| format!("{}: {e}", lib_dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("libggml-base.so"))
            })
            .collect();
        base.sort();
        if let Some(b) = base.first() {
            libs.push(
                unsafe { Library::open(Some(b), RTLD_NOW | RTLD_GLOBAL) }
                    .map_err(|e| format!("cannot load {}: {e}", b.display()))?,
            );
        }
        let path = lib_dir.join("libggml-vulkan.so");
        libs.push(
            unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_GLOBAL) }
                .map_err(|e| format!("cannot load {}: {e}", path.display()))?,
        );
        let api = Api::load(&libs)?;
        let add_sinks = find(&libs, "ggml_flash_attn_ext_add_sinks").ok();
        unsafe { (api.ggml_log_set)(log_callback, std::ptr::null_mut()) };
        let n = unsafe { (api.ggml_backend_vk_get_device_count)() };
        if n < 1 {
            return Err(format!(
                "ggml's Vulkan backend sees no device (GGML_VK_VISIBLE_DEVICES={:?}); its log:\n{}",
                std::env::var("GGML_VK_VISIBLE_DEVICES").unwrap_or_default(),
                logged()
            ));
        }
        let mut buf = [0 as c_char; 256];
        unsafe { (api.ggml_backend_vk_get_device_description)(0, buf.as_mut_ptr(), buf.len()) };
        let description = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let backend = unsafe { (api.ggml_backend_vk_init)(0) };
        if backend.is_null() {
            return Err(format!(
                "ggml_backend_vk_init(0) failed; its log:\n{}",
                logged()
            ));
        }
        Ok(Ggml {
            api,
            add_sinks,
            backend,
            description,
            _libs: libs,
        })
    }

    /// Builds `op` as a one-op graph, checks supports_op, uploads, computes and reads dst
    /// (with `timing`, then computes it again and times that). Most failures inside ggml abort
    /// the process instead (the worker's parent records them).
    pub fn run(&self, op: &GraphOp, timing: Option<Timing>) -> Result<GraphRun, Refusal> {
        let a = &self.api;
        unsafe {
            let mem_size = 32 * (a.ggml_tensor_overhead)() + (a.ggml_graph_overhead)() + 4096;
            let ctx = (a.ggml_init)(InitParams {
                mem_size,
                mem_buffer: std::ptr::null_mut(),
                no_alloc: true,
            });
            if ctx.is_null() {
                return Err(Refusal::Error("ggml_init failed".into()));
            }
            let result = self.graph(ctx, op, timing);
            (a.ggml_free)(ctx);
            result
        }
    }

    unsafe fn graph<'t>(
        &self,
        ctx: P,
        op: &GraphOp<'t>,
        timing: Option<Timing>,
    ) -> Result<GraphRun, Refusal> {
        let a = &self.api;
        let mut uploads: Vec<(P, &'t [u8])> = Vec::new();
        let mut tensor = |t: &'t Tensor| -> P {
            let ne = t.ne().map(|x| x as i64);
            let ty = type_id(t.dtype());
            let base = if t.is_contiguous() {
                (a.ggml_new_tensor_4d)(ctx, ty, ne[0], ne[1], ne[2], ne[3])
            } else {
                // A strided tensor is a view of a dense 1-D tensor holding the backing bytes.
                let dt = t.dtype();
                let elems = t.data().len() / dt.block_bytes() * dt.block_len();
                let flat = (a.ggml_new_tensor_1d)(ctx, ty, elems as i64);
                uploads.push((flat, t.data()));
                let nb = t.nb();
                return (a.ggml_view_4d)(
                    ctx, flat, ne[0], ne[1], ne[2], ne[3], nb[1], nb[2], nb[3], 0,
                );
            };
            uploads.push((base, t.data()));
            base
        };
        let dst = match op {
            GraphOp::MulMat {
                a: x,
                b: y,
                prec_f32,
            } => {
                let (x, y) = (tensor(x), tensor(y));
                let d = (a.ggml_mul_mat)(ctx, x, y);
                if *prec_f32 {
                    (a.ggml_mul_mat_set_prec)(d, PREC_F32);
                }
                d
            }
            GraphOp::MulMatId {
                a: x,
                b: y,
                ids,
                prec_f32,
            } => {
                let (x, y, ids) = (tensor(x), tensor(y), tensor(ids));
                let d = (a.ggml_mul_mat_id)(ctx, x, y, ids);
                if *prec_f32 {
                    // No public setter; Vulkan reads op_params[0] as the precision.
                    *((d as *mut u8).add(OP_PARAMS_OFFSET) as *mut i32) = PREC_F32;
                }
                d
            }
            GraphOp::FlashAttn {
                q,
                k,
                v,
                mask,
                sinks,
                scale,
                max_bias,
                softcap,
                prec_f32,
            } => {
                // Before building anything: a build without sinks refuses such an op.
                let add_sinks = match (sinks, &self.add_sinks) {
                    (Some(_), None) => {
                        return Err(Refusal::Unsupported(
                            "attention sinks: this ggml build has no ggml_flash_attn_ext_add_sinks (added after the July 2025 revision)".into(),
                        ))
                    }
                    (Some(s), Some(f)) => Some((s, f)),
                    (None, _) => None,
                };
                let (q, k, v) = (tensor(q), tensor(k), tensor(v));
                let m = mask.map_or(std::ptr::null_mut(), &mut tensor);
                let d = (a.ggml_flash_attn_ext)(ctx, q, k, v, m, *scale, *max_bias, *softcap);
                if *prec_f32 {
                    (a.ggml_flash_attn_ext_set_prec)(d, PREC_F32);
                }
                if let Some((s, f)) = add_sinks {
                    f(d, tensor(s));
                }
                d
            }
            GraphOp::Wkv7(t) => {
                let s: Vec<P> = t.iter().map(|x| tensor(x)).collect();
                (a.ggml_rwkv_wkv7)(ctx, s[0], s[1], s[2], s[3], s[4], s[5], s[6])
            }
        };
        // Allocated right after dst (creation order), so a write past dst's end lands in it.
        let guard = (a.ggml_new_tensor_1d)(ctx, 0, GUARD as i64);
        if !(a.ggml_backend_supports_op)(self.backend, dst) {
            return Err(Refusal::Unsupported(
                "ggml_backend_supports_op is false for this op on this device".into(),
            ));
        }
        let graph = (a.ggml_new_graph)(ctx);
        (a.ggml_build_forward_expand)(graph, dst);
        let buf = (a.ggml_backend_alloc_ctx_tensors)(ctx, self.backend);
        if buf.is_null() {
            return Err(Refusal::Unsupported(
                "too large for this device: ggml could not allocate the tensors".into(),
            ));
        }
        // Neighbouring bytes read by kernels without robustness are finite but not zero.
        (a.ggml_backend_buffer_clear)(buf, 0x3f);
        for (t, bytes) in &uploads {
            let n = (a.ggml_nbytes)(*t).min(bytes.len());
            (a.ggml_backend_tensor_set)(*t, bytes.as_ptr().cast(), 0, n);
        }
        let dst_bytes = (a.ggml_nbytes)(dst);
        let poison: Vec<u32> = vec![POISON; dst_bytes / 4];
        (a.ggml_backend_tensor_set)(dst, poison.as_ptr().cast(), 0, dst_bytes);
        let guard_fill = vec![POISON; GUARD];
        (a.ggml_backend_tensor_set)(guard, guard_fill.as_ptr().cast(), 0, GUARD * 4);
        let status = (a.ggml_backend_graph_compute)(self.backend, graph);
        let mut values = vec![0f32; dst_bytes / 4];
        (a.ggml_backend_tensor_get)(dst, values.as_mut_ptr().cast(), 0, dst_bytes);
        let mut after = vec![0u32; GUARD];
        (a.ggml_backend_tensor_get)(guard, after.as_mut_ptr().cast(), 0, GUARD * 4);
        // The same graph again, inputs in place: graph_compute is synchronous, so its wall time
        // is ggml's whole cost of the op (command recording, submit, GPU time, wait).
        let compute_ns = timing.filter(|_| status == 0).map(|t| {
            let _paused = t.heater.as_ref().map(|h| h.pause());
            for _ in 0..t.warmup {
                (a.ggml_backend_graph_compute)(self.backend, graph);
            }
            let mut ns: Vec<f64> = (0..t.repeats.max(1))
                .map(|_| {
                    let start = std::time::Instant::now();
                    (a.ggml_backend_graph_compute)(self.backend, graph);
                    start.elapsed().as_nanos() as f64
                })
                .collect();
            ns.sort_by(f64::total_cmp);
            ns[ns.len() / 2]
        });
        (a.ggml_backend_buffer_free)(buf);
        if status != 0 {
            return Err(Refusal::Error(format!(
                "ggml_backend_graph_compute returned status {status}"
            )));
        }
        Ok(GraphRun {
            values,
            overrun: after.iter().any(|&x| x != POISON),
            compute_ns,
        })
    }
}

impl Drop for Ggml {
    fn drop(&mut self) {
        unsafe { (self.api.ggml_backend_free)(self.backend) };
    }
}
