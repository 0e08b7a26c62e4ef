//! ggml's public C API, loaded at run time from a build (libloading), and one graph run through
//! it: a single op, or a fused decode graph (the op and the element-wise nodes after it) and its
//! unfused twin (each node a graph of its own). Only functions whose signatures are the same at
//! the pinned July 2025 revision and today's are used (ggml-host.md §1), and `ggml_add_id`, which
//! later trees added and whose absence skips the graphs that need it; enum values that moved
//! between revisions (ggml_op) are never passed.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::sync::Mutex;

use libloading::os::unix::{Library, Symbol, RTLD_GLOBAL, RTLD_NOW};
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use crate::model::driver::{GraphOp, Tail};

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
pub(crate) fn type_id(t: DType) -> c_int {
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
        DType::Tq1_0 => 34,
        DType::Tq2_0 => 35,
        DType::Mxfp4 => 39,
        DType::Nvfp4 => 40,
        DType::Q1_0 => 41,
        DType::Q2_0 => 42,
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
    ggml_add: fn(P, P, P) -> P;
    ggml_mul: fn(P, P, P) -> P;
    ggml_backend_alloc_ctx_tensors: fn(P, P) -> P;
    ggml_backend_buffer_clear: fn(P, u8);
    ggml_backend_buffer_free: fn(P);
    ggml_backend_tensor_set: fn(P, *const c_void, usize, usize);
    ggml_backend_tensor_get: fn(P, *mut c_void, usize, usize);
    ggml_new_graph: fn(P) -> P;
    ggml_build_forward_expand: fn(P, P);
    ggml_backend_graph_compute: fn(P, P) -> c_int;
}

/// A loaded ggml build with its Vulkan backend on one device, or ([`Ggml::open_cpu`]) its CPU
/// backend.
pub struct Ggml {
    api: Api,
    /// `ggml_add_id` (gpt-oss's per-expert bias), which trees before August 2025 lack.
    add_id: Option<Symbol<unsafe extern "C" fn(P, P, P, P) -> P>>,
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
    /// With timing asked: the process's CPU seconds (every thread) per timed compute, the
    /// mean of the timed ones (for the CPU backend, whose workers are this process's threads).
    pub compute_cpu_s: Option<f64>,
    /// dst's ne as ggml made it.
    pub ne: [usize; 4],
}

/// `struct ggml_tensor`'s ne[4] start at this byte offset (after type, padding and buffer).
const NE_OFFSET: usize = 16;

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
    pub heater: Option<std::sync::Arc<dyn vkdiff_gpu::context::Pausable>>,
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
        let libs = load(lib_dir, "libggml-vulkan.so")?;
        let api = Api::load(&libs)?;
        let device_count =
            find::<unsafe extern "C" fn() -> c_int>(&libs, "ggml_backend_vk_get_device_count")?;
        let device_description = find::<unsafe extern "C" fn(c_int, *mut c_char, usize)>(
            &libs,
            "ggml_backend_vk_get_device_description",
        )?;
        let init = find::<unsafe extern "C" fn(usize) -> P>(&libs, "ggml_backend_vk_init")?;
        let add_id = find(&libs, "ggml_add_id").ok();
        let add_sinks = find(&libs, "ggml_flash_attn_ext_add_sinks").ok();
        unsafe { (api.ggml_log_set)(log_callback, std::ptr::null_mut()) };
        let n = unsafe { device_count() };
        if n < 1 {
            return Err(format!(
                "ggml's Vulkan backend sees no device (GGML_VK_VISIBLE_DEVICES={:?}); its log:\n{}",
                std::env::var("GGML_VK_VISIBLE_DEVICES").unwrap_or_default(),
                logged()
            ));
        }
        let mut buf = [0 as c_char; 256];
        unsafe { device_description(0, buf.as_mut_ptr(), buf.len()) };
        let description = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let backend = unsafe { init(0) };
        if backend.is_null() {
            return Err(format!(
                "ggml_backend_vk_init(0) failed; its log:\n{}",
                logged()
            ));
        }
        Ok(Ggml {
            api,
            add_id,
            add_sinks,
            backend,
            description,
            _libs: libs,
        })
    }

    /// Loads a CPU-backend build in `lib_dir` ([`super::build::build_cpu`]) and opens ggml's
    /// CPU backend with `threads` threads (its buffers are plain host memory: weights in
    /// ggml's own layout, not the repacked one llama.cpp's model loader may choose).
    pub fn open_cpu(lib_dir: &Path, threads: usize) -> Result<Ggml, String> {
        let libs = load(lib_dir, "libggml-cpu.so")?;
        let api = Api::load(&libs)?;
        let init = find::<unsafe extern "C" fn() -> P>(&libs, "ggml_backend_cpu_init")?;
        let set_threads =
            find::<unsafe extern "C" fn(P, c_int)>(&libs, "ggml_backend_cpu_set_n_threads")?;
        unsafe { (api.ggml_log_set)(log_callback, std::ptr::null_mut()) };
        let backend = unsafe { init() };
        if backend.is_null() {
            return Err(format!(
                "ggml_backend_cpu_init failed; its log:\n{}",
                logged()
            ));
        }
        unsafe { set_threads(backend, threads as c_int) };
        let add_id = find(&libs, "ggml_add_id").ok();
        let add_sinks = find(&libs, "ggml_flash_attn_ext_add_sinks").ok();
        Ok(Ggml {
            api,
            add_id,
            add_sinks,
            backend,
            description: format!("ggml CPU backend, {threads} threads"),
            _libs: libs,
        })
    }
}

/// Loads `lib_dir`'s libggml-base, then its backend library `name`.
fn load(lib_dir: &Path, name: &str) -> Result<Vec<Library>, String> {
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
    let path = lib_dir.join(name);
    libs.push(
        unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?,
    );
    Ok(libs)
}

impl Ggml {
    /// Builds `op` as a one-op graph, checks supports_op, uploads, computes and reads dst
    /// (with `timing`, then computes it again and times that). Most failures inside ggml abort
    /// the process instead (the worker's parent records them).
    pub fn run(&self, op: &GraphOp, timing: Option<Timing>) -> Result<GraphRun, Refusal> {
        if let GraphOp::Fused {
            head,
            tail,
            unfused: true,
        } = op
        {
            return self.run_unfused(head, tail);
        }
        self.run_graph(|build| unsafe { self.nodes(op, build) }, timing)
    }

    /// A fused graph's unfused twin: the head in a graph of its own, then each tail node in a
    /// graph of its own whose first source is the previous result, read back and uploaded as
    /// an f32 tensor of its shape.
    fn run_unfused(&self, head: &GraphOp, tail: &[Tail]) -> Result<GraphRun, Refusal> {
        let mut run = self.run(head, None)?;
        let ids = match head {
            GraphOp::MulMatId { ids, .. } => Some(*ids),
            _ => None,
        };
        for node in tail {
            let prev = Tensor::from_f32(DType::F32, run.ne, &run.values)
                .map_err(|e| Refusal::Error(format!("the twin's intermediate: {e}")))?;
            let next = self.run_graph(
                |build| unsafe {
                    let x = build.tensor(&prev);
                    let ids = ids.map(|i| build.tensor(i));
                    Ok(vec![self.tail_node(build.ctx, x, node, ids, build)?])
                },
                None,
            )?;
            run = GraphRun {
                overrun: run.overrun || next.overrun,
                ..next
            };
        }
        Ok(run)
    }

    /// `node` on `x`: its tensor made by `build`, and for ADD_ID the head MUL_MAT_ID's ids
    /// tensor `ids` (ggml's fusion wants the very same tensor), or a new one holding `id_data`.
    unsafe fn tail_node<'t>(
        &self,
        ctx: P,
        x: P,
        node: &Tail<'t>,
        ids: Option<P>,
        build: &mut Builder<'_, 't>,
    ) -> Result<P, Refusal> {
        let a = &self.api;
        let t = build.tensor(node.tensor());
        Ok(match node {
            Tail::Add(_) => (a.ggml_add)(ctx, x, t),
            Tail::Mul(_) => (a.ggml_mul)(ctx, x, t),
            Tail::AddId(_) => {
                let Some(add_id) = &self.add_id else {
                    return Err(Refusal::Unsupported(
                        "this tree has no ggml_add_id (added in August 2025)".into(),
                    ));
                };
                let Some(ids) = ids else {
                    return Err(Refusal::Error(
                        "ADD_ID needs the ids of a MUL_MAT_ID head".into(),
                    ));
                };
                add_id(ctx, x, t, ids)
            }
        })
    }

    /// The nodes of `op`, in graph order, dst last.
    unsafe fn nodes<'t>(
        &self,
        op: &GraphOp<'t>,
        build: &mut Builder<'_, 't>,
    ) -> Result<Vec<P>, Refusal> {
        let a = &self.api;
        let ctx = build.ctx;
        let dst = match op {
            GraphOp::MulMat {
                a: x,
                b: y,
                prec_f32,
            } => {
                let (x, y) = (build.tensor(x), build.tensor(y));
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
                let (x, y, ids) = (build.tensor(x), build.tensor(y), build.tensor(ids));
                build.ids = Some(ids);
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
                let (q, k, v) = (build.tensor(q), build.tensor(k), build.tensor(v));
                let m = mask.map_or(std::ptr::null_mut(), |m| build.tensor(m));
                let d = (a.ggml_flash_attn_ext)(ctx, q, k, v, m, *scale, *max_bias, *softcap);
                if *prec_f32 {
                    (a.ggml_flash_attn_ext_set_prec)(d, PREC_F32);
                }
                if let Some((s, f)) = add_sinks {
                    f(d, build.tensor(s));
                }
                d
            }
            GraphOp::Wkv7(t) => {
                let s: Vec<P> = t.iter().map(|x| build.tensor(x)).collect();
                (a.ggml_rwkv_wkv7)(ctx, s[0], s[1], s[2], s[3], s[4], s[5], s[6])
            }
            GraphOp::Fused { head, tail, .. } => {
                let mut nodes = self.nodes(head, build)?;
                for node in tail.iter() {
                    let prev = *nodes.last().expect("a head node");
                    let ids = build.ids;
                    nodes.push(self.tail_node(ctx, prev, node, ids, build)?);
                }
                return Ok(nodes);
            }
        };
        Ok(vec![dst])
    }

    /// Builds a graph with `build` (which returns its nodes, dst last), checks supports_op for
    /// each node, uploads, computes and reads dst (with `timing`, then computes it again and
    /// times that). Most failures inside ggml abort the process instead (the worker's parent
    /// records them).
    fn run_graph<'t>(
        &self,
        build: impl FnOnce(&mut Builder<'_, 't>) -> Result<Vec<P>, Refusal>,
        timing: Option<Timing>,
    ) -> Result<GraphRun, Refusal> {
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
            let mut builder = Builder {
                api: a,
                ctx,
                uploads: Vec::new(),
                ids: None,
            };
            let result = build(&mut builder).and_then(|nodes| {
                let uploads = std::mem::take(&mut builder.uploads);
                self.compute(ctx, &nodes, &uploads, timing)
            });
            (a.ggml_free)(ctx);
            result
        }
    }

    unsafe fn compute(
        &self,
        ctx: P,
        nodes: &[P],
        uploads: &[(P, &[u8])],
        timing: Option<Timing>,
    ) -> Result<GraphRun, Refusal> {
        let a = &self.api;
        let dst = *nodes.last().expect("a graph has a node");
        // Allocated right after dst (creation order), so a write past dst's end lands in it.
        let guard = (a.ggml_new_tensor_1d)(ctx, 0, GUARD as i64);
        for &node in nodes {
            if !(a.ggml_backend_supports_op)(self.backend, node) {
                return Err(Refusal::Unsupported(
                    "ggml_backend_supports_op is false for this op on this device".into(),
                ));
            }
        }
        // Only dst is built: the nodes before it are reached through their uses, in creation
        // order, so the graph holds them consecutively as a model's graph does.
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
        for (t, bytes) in uploads {
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
        let mut compute_cpu_s = None;
        let compute_ns = timing.filter(|_| status == 0).map(|t| {
            let _paused = t.heater.as_ref().map(|h| h.clone().pause());
            for _ in 0..t.warmup {
                (a.ggml_backend_graph_compute)(self.backend, graph);
            }
            let cpu = process_cpu_s();
            let mut ns: Vec<f64> = (0..t.repeats.max(1))
                .map(|_| {
                    let start = std::time::Instant::now();
                    (a.ggml_backend_graph_compute)(self.backend, graph);
                    start.elapsed().as_nanos() as f64
                })
                .collect();
            compute_cpu_s = Some((process_cpu_s() - cpu) / ns.len() as f64);
            ns.sort_by(f64::total_cmp);
            ns[ns.len() / 2]
        });
        (a.ggml_backend_buffer_free)(buf);
        if status != 0 {
            return Err(Refusal::Error(format!(
                "ggml_backend_graph_compute returned status {status}"
            )));
        }
        let ne = *((dst as *const u8).add(NE_OFFSET) as *const [i64; 4]);
        Ok(GraphRun {
            values,
            overrun: after.iter().any(|&x| x != POISON),
            compute_ns,
            compute_cpu_s,
            ne: ne.map(|x| x as usize),
        })
    }
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: std::ffi::c_int, ts: *mut Timespec) -> std::ffi::c_int;
}

/// CLOCK_PROCESS_CPUTIME_ID on Linux.
const PROCESS_CPUTIME: std::ffi::c_int = 2;

/// This process's CPU time (user + system, every thread: rayon's and ggml's workers), in
/// seconds, to the nanosecond: on a busy machine it moves less with the load than wall time
/// (time spent waiting for a core is not counted; spinning in a barrier is).
pub fn process_cpu_s() -> f64 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let rc = unsafe { clock_gettime(PROCESS_CPUTIME, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The tensors of a graph being built: each source is a new tensor (a strided one a view of a
/// dense 1-D tensor holding its backing bytes) whose data is uploaded after allocation.
struct Builder<'g, 't> {
    api: &'g Api,
    ctx: P,
    uploads: Vec<(P, &'t [u8])>,
    /// The ids tensor of a MUL_MAT_ID head, which ADD_ID reuses.
    ids: Option<P>,
}

impl<'t> Builder<'_, 't> {
    /// A new source tensor holding `t`.
    unsafe fn tensor(&mut self, t: &'t Tensor) -> P {
        let a = self.api;
        let ne = t.ne().map(|x| x as i64);
        let ty = type_id(t.dtype());
        if t.is_contiguous() {
            let base = (a.ggml_new_tensor_4d)(self.ctx, ty, ne[0], ne[1], ne[2], ne[3]);
            self.uploads.push((base, t.data()));
            return base;
        }
        let dt = t.dtype();
        let elems = t.data().len() / dt.block_bytes() * dt.block_len();
        let flat = (a.ggml_new_tensor_1d)(self.ctx, ty, elems as i64);
        self.uploads.push((flat, t.data()));
        let nb = t.nb();
        (a.ggml_view_4d)(
            self.ctx, flat, ne[0], ne[1], ne[2], ne[3], nb[1], nb[2], nb[3], 0,
        )
    }
}

impl Drop for Ggml {
    fn drop(&mut self) {
        unsafe { (self.api.ggml_backend_free)(self.backend) };
    }
}
