//! A device ready to run kernels: cached pipelines, reused buffers, and jobs (upload, poison,
//! dispatch, read back, time) that each run one case.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ash::vk;

use crate::compile::{ShaderTree, ShaderVariant, Spirv};
use crate::device::{Device, Instance};
use crate::error::{GpuError, Result, VkContext};
use crate::statistics::PipelineStatistics;
use crate::DeviceCaps;

/// Upstream's descriptor set layout: set 0, bindings 0..7, all storage buffers (interface.md §1.2).
pub const MAX_BINDINGS: u32 = 8;
/// Most timed repetitions one bench job records (two timestamps each).
pub const MAX_TIMED_REPEATS: u32 = 512;

/// How a bench job runs its dispatches: `warmup` untimed repetitions, then `repeats` timed ones,
/// each reading the next of `rotations` copies of every input, so no repetition finds its inputs
/// in a cache the previous one warmed. The job's `gpu_ns` is then the median repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchMode {
    /// Untimed repetitions first.
    pub warmup: u32,
    /// Timed repetitions (at most [`MAX_TIMED_REPEATS`]).
    pub repeats: u32,
    /// Copies of each input, used in turn.
    pub rotations: u32,
}

/// Poison-filled bytes after each output, checked after the run to catch writes past the end.
pub const GUARD_BYTES: usize = 256;
/// Bit pattern written over every output before each dispatch: a quiet NaN with a payload no
/// arithmetic produces, so "never written" is told apart from "computed NaN".
pub const POISON_F32: u32 = 0x7FC0_DEAD;

/// How a pipeline is built: the variant, its specialization constants and the host-side
/// options upstream passes to `ggml_vk_create_pipeline` (interface.md §1.4).
#[derive(Debug, Clone)]
pub struct PipelineDesc<'a> {
    /// The shader variant.
    pub variant: &'a ShaderVariant,
    /// Specialization constants: entry i is constant_id i.
    pub spec: Vec<u32>,
    /// Push-constant range in bytes (the host struct's size).
    pub push_size: u32,
    /// Number of bindings written at dispatch (parameter_count).
    pub bindings: u32,
    /// Turn robust buffer access off (when the device can), as upstream does for some pipelines.
    pub disable_robustness: bool,
    /// VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT when supported.
    pub full_subgroups: bool,
    /// A required subgroup size, when subgroup size control allows it.
    pub subgroup_size: Option<u32>,
}

#[derive(Hash, PartialEq, Eq)]
struct PipelineKey {
    spirv: [u8; 32],
    spec: Vec<u32>,
    push_size: u32,
    disable_robustness: bool,
    full_subgroups: bool,
    subgroup_size: Option<u32>,
    /// Created with CAPTURE_STATISTICS_KHR: a pipeline without statistics does not serve
    /// where they are wanted.
    capture_statistics: bool,
}

/// A pipeline created on this device.
#[derive(Debug, Clone, Copy)]
pub struct Pipeline {
    raw: vk::Pipeline,
    layout: vk::PipelineLayout,
    push_size: u32,
    bindings: u32,
}

struct PooledBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
    /// Mapped pointer when the buffer itself is host visible (direct mode).
    mapped: *mut u8,
}

/// Whether kernels read host-visible buffers directly or device-local copies made from a
/// staging buffer. Direct is chosen on CPU and integrated devices, where it is the same memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryMode {
    /// Buffers are mapped; no copies.
    Direct,
    /// Device-local buffers, uploaded and read back through a host-visible staging buffer.
    Staged,
}

/// A background load that timed jobs stop for (the bench's heater, [`crate::heat::Heater`]):
/// `pause` returns once it is idle, and it resumes when the guard is dropped.
pub trait Pausable: Send + Sync {
    /// Pauses until the returned guard is dropped.
    fn pause(self: std::sync::Arc<Self>) -> Box<dyn Send>;
}

/// A device with everything needed to run cases on it. Dropping it waits for the device and
/// frees everything in reverse order of creation.
pub struct Gpu {
    // Declared before `device` and `instance` so they outlive it; freed in Drop.
    pipelines: HashMap<PipelineKey, Pipeline>,
    layouts: HashMap<u32, vk::PipelineLayout>,
    buffers: Vec<PooledBuffer>,
    staging: Option<PooledBuffer>,
    dsl: vk::DescriptorSetLayout,
    descriptor_pool: vk::DescriptorPool,
    command_pool: vk::CommandPool,
    command_buffer: vk::CommandBuffer,
    fence: vk::Fence,
    query_pool: vk::QueryPool,
    mode: MemoryMode,
    timeout: Duration,
    /// The last job ran past `timeout`: its fence had not signalled, so the device may still be
    /// using its command buffer, descriptor set, fence and buffers (`settle`).
    pending: bool,
    jobs_run: u64,
    bench: Option<BenchMode>,
    /// The median time of the last timed job (bench mode).
    last_bench_ns: Option<f64>,
    /// Paused for the span of every timed job (bench mode), when set.
    heater: Option<std::sync::Arc<dyn Pausable>>,
    /// Loaded where the device has VK_KHR_pipeline_executable_properties (enabled then).
    statistics_loader: Option<ash::khr::pipeline_executable_properties::Device>,
    /// Create pipelines with their compiler statistics (bench; off by default).
    capture_statistics: bool,
    /// The statistics of the pipelines created while capturing, by handle.
    statistics: HashMap<vk::Pipeline, PipelineStatistics>,
    /// The pipelines dispatched by timed jobs since bench mode was last set, each once.
    timed_pipelines: Vec<Pipeline>,
    /// Profiling only: each pipeline's shader and specialization, until its first job has run.
    unused_pipelines: HashMap<vk::Pipeline, String>,
    /// The logical device (and its capabilities).
    pub device: Device,
    instance: Instance,
}

impl Gpu {
    /// Opens the device chosen by `selector` (index or name substring; see
    /// [`Instance::select`]).
    pub fn open(selector: Option<&str>) -> Result<Self> {
        Self::open_with(selector, crate::device::Extensions::ALL)
    }

    /// As [`Gpu::open`], with only the optional extensions in `extensions` (where the device
    /// has them): a device for the kernels that use just those.
    pub fn open_with(
        selector: Option<&str>,
        extensions: crate::device::Extensions,
    ) -> Result<Self> {
        let instance = Instance::new()?;
        let adapter = instance.select(selector)?;
        let device = Device::new(&instance, &adapter, extensions)?;
        // What the layer says about creating the device concerns no case: it is our host code's
        // problem, reported here rather than charged to whichever case runs first.
        let messages = crate::layer_messages::explain_consequences(instance.take_messages());
        if crate::layer_messages::only_unvalidated(&messages) {
            // E.g. an extension the layer does not know: the rows that use it will say so
            // (their pipelines draw the same kind of message); the others stay validated.
            for m in &messages {
                eprintln!("vkdiff: creating the device: {m}");
            }
        } else if !messages.is_empty() {
            return Err(GpuError::Validation(messages));
        }
        let d = &device.raw;
        let binding: Vec<_> = (0..MAX_BINDINGS)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let dsl = unsafe {
            d.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding),
                None,
            )
        }
        .during("vkCreateDescriptorSetLayout")?;
        // Enough for a bench job: every dispatch of every repetition gets its own set.
        const SETS: u32 = 4096;
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: SETS * MAX_BINDINGS,
        }];
        let descriptor_pool = unsafe {
            d.create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default()
                    .max_sets(SETS)
                    .pool_sizes(&sizes),
                None,
            )
        }
        .during("vkCreateDescriptorPool")?;
        let command_pool = unsafe {
            d.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(device.queue_family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
        }
        .during("vkCreateCommandPool")?;
        let command_buffer = unsafe {
            d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(command_pool)
                    .command_buffer_count(1),
            )
        }
        .during("vkAllocateCommandBuffers")?[0];
        let fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }
            .during("vkCreateFence")?;
        let query_pool = unsafe {
            d.create_query_pool(
                &vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(2 * MAX_TIMED_REPEATS),
                None,
            )
        }
        .during("vkCreateQueryPool")?;
        let same_memory = matches!(device.caps.kind.as_str(), "cpu" | "integrated");
        let mode = if same_memory && !crate::env::env().staging {
            MemoryMode::Direct
        } else {
            MemoryMode::Staged
        };
        let timeout = Duration::from_secs(crate::env::env().timeout_s);
        let statistics_loader = device.caps.pipeline_statistics.then(|| {
            ash::khr::pipeline_executable_properties::Device::new(&instance.raw, &device.raw)
        });
        Ok(Gpu {
            pipelines: HashMap::new(),
            layouts: HashMap::new(),
            buffers: Vec::new(),
            staging: None,
            dsl,
            descriptor_pool,
            command_pool,
            command_buffer,
            fence,
            query_pool,
            mode,
            timeout,
            pending: false,
            jobs_run: 0,
            bench: None,
            last_bench_ns: None,
            heater: None,
            statistics_loader,
            capture_statistics: false,
            statistics: HashMap::new(),
            timed_pipelines: Vec::new(),
            unused_pipelines: HashMap::new(),
            device,
            instance,
        })
    }

    /// Waits (up to the timeout again) for a job that ran past the timeout, before anything it
    /// may still use is reset or refilled: re-recording its command buffer while lavapipe's
    /// queue thread still walked it crashed that thread (SIGSEGV in libvulkan_lvp.so,
    /// seen on 2026-12-02). Still running: this job reports a lost device too.
    fn settle(&mut self) -> Result<()> {
        if !self.pending {
            return Ok(());
        }
        match self.wait_for_job() {
            Ok(()) => {
                self.pending = false;
                Ok(())
            }
            Err(vk::Result::TIMEOUT) => Err(GpuError::DeviceLost {
                during: format!(
                    "an earlier job, still running past {:?} more (VKDIFF_TIMEOUT_S)",
                    self.timeout
                ),
            }),
            Err(code) => Err(GpuError::vk("vkWaitForFences", code)),
        }
    }

    /// Waits up to the timeout for the last submitted job's fence.
    fn wait_for_job(&self) -> ash::prelude::VkResult<()> {
        let d = &self.device.raw;
        unsafe { d.wait_for_fences(&[self.fence], true, self.timeout.as_nanos() as u64) }
    }

    /// The device's capabilities.
    pub fn caps(&self) -> &DeviceCaps {
        &self.device.caps
    }

    /// Replaces the capabilities the case models read (backend mode: a configuration that
    /// turns features off for the backend must turn them off for the error models too).
    pub fn set_caps(&mut self, caps: DeviceCaps) {
        self.device.caps = caps;
    }

    /// True when the Khronos validation layer checks every call (`VKDIFF_VALIDATE`).
    pub fn validating(&self) -> bool {
        self.instance.validating()
    }

    /// The median GPU time of the last job run in bench mode, whatever its result.
    pub fn last_bench_ns(&self) -> Option<f64> {
        self.last_bench_ns
    }

    /// Keeps `heater` running except during this Gpu's timed jobs ([`crate::heat`]).
    pub fn set_heater(&mut self, heater: Option<std::sync::Arc<dyn Pausable>>) {
        self.heater = heater;
    }

    /// The heater in use.
    pub fn heater(&self) -> Option<std::sync::Arc<dyn Pausable>> {
        self.heater.clone()
    }

    /// Makes every following job a timed benchmark (None: back to single runs). Entering bench
    /// mode starts a new record of [`Gpu::timed_pipelines`].
    pub fn set_bench(&mut self, bench: Option<BenchMode>) {
        if bench.is_some() {
            self.timed_pipelines.clear();
        }
        self.bench = bench.map(|b| BenchMode {
            repeats: b.repeats.clamp(1, MAX_TIMED_REPEATS),
            rotations: b.rotations.max(1),
            ..b
        });
    }

    /// Creates the following pipelines with their compiler statistics, where the device reports
    /// them ([`DeviceCaps::pipeline_statistics`]); see [`Gpu::statistics`].
    pub fn set_capture_statistics(&mut self, on: bool) {
        self.capture_statistics = on;
    }

    /// Whether pipelines created now get statistics (asked for, and the device reports them).
    pub fn captures_statistics(&self) -> bool {
        self.capture_statistics && self.statistics_loader.is_some()
    }

    /// The compiler statistics of `pipeline`, if it was created while capturing them.
    pub fn statistics(&self, pipeline: Pipeline) -> Option<&PipelineStatistics> {
        self.statistics.get(&pipeline.raw)
    }

    /// The pipelines that timed jobs dispatched since bench mode was last set, in first-use
    /// order: what a bench row's time was spent in.
    pub fn timed_pipelines(&self) -> &[Pipeline] {
        &self.timed_pipelines
    }

    /// How buffers reach the device.
    pub fn memory_mode(&self) -> MemoryMode {
        self.mode
    }

    /// Switches how buffers reach the device. Staged works everywhere (buffers made for direct
    /// mode are host visible, which staged mode does not mind), so tests use this to run the
    /// discrete-GPU path on lavapipe; `VKDIFF_STAGING=1` does the same from the start.
    pub fn set_memory_mode(&mut self, mode: MemoryMode) {
        if mode == MemoryMode::Direct && self.mode == MemoryMode::Staged {
            // Buffers created for staging may not be host visible: start over.
            let old: Vec<_> = self.buffers.drain(..).collect();
            old.into_iter().for_each(|b| self.free(b));
        }
        self.mode = mode;
    }

    /// The pipeline for `desc`, compiled from `tree` and created on first use, cached after.
    pub fn pipeline(&mut self, tree: &mut ShaderTree, desc: &PipelineDesc) -> Result<Pipeline> {
        let spirv = tree.spirv(desc.variant)?;
        let key = PipelineKey {
            spirv: spirv.hash,
            spec: desc.spec.clone(),
            push_size: desc.push_size,
            disable_robustness: desc.disable_robustness,
            full_subgroups: desc.full_subgroups,
            subgroup_size: desc.subgroup_size,
            capture_statistics: self.captures_statistics(),
        };
        if let Some(p) = self.pipelines.get(&key) {
            return Ok(*p);
        }
        let _span = crate::profile::span("pipeline creation");
        let p = self.create_pipeline(&spirv, desc, key.capture_statistics)?;
        let statistics = if key.capture_statistics {
            self.read_statistics(p, desc)
        } else {
            None
        };
        // A pipeline the layer objects to is not used (drivers may crash on it).
        let messages = self.instance.take_messages();
        if !messages.is_empty() {
            unsafe { self.device.raw.destroy_pipeline(p.raw, None) };
            return Err(GpuError::Validation(messages));
        }
        if let Some(s) = statistics {
            self.statistics.insert(p.raw, s);
        }
        if crate::profile::enabled() {
            let label = format!("{} {:?}", desc.variant.name, desc.spec);
            self.unused_pipelines.insert(p.raw, label);
        }
        self.pipelines.insert(key, p);
        Ok(p)
    }

    /// The statistics of `p`, just created for `desc` with CAPTURE_STATISTICS_KHR. A driver
    /// that fails to report them costs the bench its statistics line, not the pipeline: said,
    /// then None.
    fn read_statistics(&self, p: Pipeline, desc: &PipelineDesc) -> Option<PipelineStatistics> {
        let loader = self.statistics_loader.as_ref()?;
        match crate::statistics::read(loader, p.raw) {
            Ok(executables) => Some(PipelineStatistics {
                shader: desc.variant.name.clone(),
                spec: desc.spec.clone(),
                executables,
            }),
            Err(e) => {
                eprintln!("vkdiff: statistics of {}: {e}", desc.variant.name);
                None
            }
        }
    }

    fn layout(&mut self, push_size: u32) -> Result<vk::PipelineLayout> {
        if let Some(l) = self.layouts.get(&push_size) {
            return Ok(*l);
        }
        let ranges = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::COMPUTE,
            offset: 0,
            size: push_size,
        }];
        let sets = [self.dsl];
        let mut ci = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets);
        if push_size > 0 {
            ci = ci.push_constant_ranges(&ranges);
        }
        let l = unsafe { self.device.raw.create_pipeline_layout(&ci, None) }
            .during("vkCreatePipelineLayout")?;
        self.layouts.insert(push_size, l);
        Ok(l)
    }

    fn create_pipeline(
        &mut self,
        spirv: &Arc<Spirv>,
        desc: &PipelineDesc,
        capture_statistics: bool,
    ) -> Result<Pipeline> {
        let layout = self.layout(desc.push_size)?;
        let d = &self.device.raw;
        let caps = &self.device.caps;
        let module = unsafe {
            d.create_shader_module(
                &vk::ShaderModuleCreateInfo::default().code(&spirv.words),
                None,
            )
        }
        .during("vkCreateShaderModule")?;
        let entries: Vec<_> = (0..desc.spec.len() as u32)
            .map(|i| vk::SpecializationMapEntry {
                constant_id: i,
                offset: 4 * i,
                size: 4,
            })
            .collect();
        let data: Vec<u8> = desc.spec.iter().flat_map(|v| v.to_le_bytes()).collect();
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main")
            .specialization_info(&spec);
        if desc.full_subgroups && caps.full_subgroups {
            stage = stage.flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS);
        }
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default();
        if let (Some(size), Some((lo, hi))) = (desc.subgroup_size, caps.subgroup_size_range) {
            if (lo..=hi).contains(&size) {
                required = required.required_subgroup_size(size);
                stage = stage.push_next(&mut required);
            }
        }
        let mut robustness = vk::PipelineRobustnessCreateInfoEXT::default()
            .storage_buffers(vk::PipelineRobustnessBufferBehaviorEXT::DISABLED)
            .uniform_buffers(vk::PipelineRobustnessBufferBehaviorEXT::DISABLED);
        let mut ci = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout);
        if desc.disable_robustness && caps.pipeline_robustness {
            ci = ci.push_next(&mut robustness);
        }
        if capture_statistics {
            ci = ci.flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR);
        }
        let result = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[ci], None) };
        unsafe { d.destroy_shader_module(module, None) };
        let raw = result.map_err(|(_, code)| GpuError::vk("vkCreateComputePipelines", code))?[0];
        Ok(Pipeline {
            raw,
            layout,
            push_size: desc.push_size,
            bindings: desc.bindings,
        })
    }

    /// Starts a job: a sequence of dispatches over buffers, run by [`Job::submit`].
    pub fn job(&mut self) -> Job<'_> {
        Job {
            gpu: self,
            buffers: Vec::new(),
            dispatches: Vec::new(),
        }
    }

    fn ensure_buffer(&mut self, slot: usize, size: u64, host_visible: bool) -> Result<()> {
        let pool = if host_visible && self.mode == MemoryMode::Staged {
            None
        } else {
            Some(slot)
        };
        let existing = match pool {
            Some(i) => self.buffers.get(i),
            None => self.staging.as_ref(),
        };
        if existing.is_some_and(|b| b.size >= size) {
            return Ok(());
        }
        let grown = existing.map_or(size, |b| size.max(b.size * 2));
        let direct = self.mode == MemoryMode::Direct;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        let flags = if host_visible || direct {
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT
        } else {
            vk::MemoryPropertyFlags::DEVICE_LOCAL
        };
        let buf = self.allocate(grown, usage, flags)?;
        let old = match pool {
            Some(i) => {
                if i == self.buffers.len() {
                    self.buffers.push(buf);
                    None
                } else {
                    Some(std::mem::replace(&mut self.buffers[i], buf))
                }
            }
            None => self.staging.replace(buf),
        };
        if let Some(old) = old {
            self.free(old);
        }
        Ok(())
    }

    fn allocate(
        &self,
        size: u64,
        usage: vk::BufferUsageFlags,
        flags: vk::MemoryPropertyFlags,
    ) -> Result<PooledBuffer> {
        let d = &self.device.raw;
        let oom = |e: GpuError| match e {
            GpuError::OutOfMemory { .. } => GpuError::OutOfMemory {
                what: format!("a buffer of {size} bytes"),
            },
            e => e,
        };
        let buffer = unsafe {
            d.create_buffer(
                &vk::BufferCreateInfo::default().size(size).usage(usage),
                None,
            )
        }
        .during("vkCreateBuffer")
        .map_err(oom)?;
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let Some(type_index) = self.device.memory_type(req.memory_type_bits, flags) else {
            unsafe { d.destroy_buffer(buffer, None) };
            return Err(GpuError::Unsupported(format!(
                "no memory type with {flags:?}"
            )));
        };
        let memory = match unsafe {
            d.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(type_index),
                None,
            )
        } {
            Ok(m) => m,
            Err(code) => {
                unsafe { d.destroy_buffer(buffer, None) };
                return Err(oom(GpuError::vk("vkAllocateMemory", code)));
            }
        };
        unsafe { d.bind_buffer_memory(buffer, memory, 0) }.during("vkBindBufferMemory")?;
        let mapped = if flags.contains(vk::MemoryPropertyFlags::HOST_VISIBLE) {
            unsafe { d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                .during("vkMapMemory")? as *mut u8
        } else {
            std::ptr::null_mut()
        };
        Ok(PooledBuffer {
            buffer,
            memory,
            size,
            mapped,
        })
    }

    fn free(&self, b: PooledBuffer) {
        unsafe {
            let _ = self.device.raw.device_wait_idle();
            self.device.raw.destroy_buffer(b.buffer, None);
            self.device.raw.free_memory(b.memory, None);
        }
    }
}

// SAFETY: the raw pointers are mappings of memory owned by this Gpu; every use goes through
// `&mut Gpu`, so moving the whole context to another thread is sound (Vulkan handles are
// thread-agnostic when externally synchronised).
unsafe impl Send for Gpu {}

impl Drop for Gpu {
    fn drop(&mut self) {
        let d = &self.device.raw;
        unsafe {
            let _ = d.device_wait_idle();
            for p in self.pipelines.values() {
                d.destroy_pipeline(p.raw, None);
            }
            for l in self.layouts.values() {
                d.destroy_pipeline_layout(*l, None);
            }
            for b in self.buffers.drain(..).chain(self.staging.take()) {
                d.destroy_buffer(b.buffer, None);
                d.free_memory(b.memory, None);
            }
            d.destroy_query_pool(self.query_pool, None);
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.command_pool, None);
            d.destroy_descriptor_pool(self.descriptor_pool, None);
            d.destroy_descriptor_set_layout(self.dsl, None);
        }
    }
}

/// A buffer within one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferId(usize);

enum Contents {
    Input(Vec<u8>),
    /// Filled with the poison word before the first dispatch; read back after the last.
    Output(u32),
}

struct JobBuffer {
    bytes: usize,
    contents: Contents,
}

impl JobBuffer {
    /// Bytes the buffer occupies: outputs carry a guard and everything is a multiple of 4
    /// (vkCmdFillBuffer needs it).
    fn padded(&self) -> u64 {
        let guard = if matches!(self.contents, Contents::Output(_)) {
            GUARD_BYTES
        } else {
            0
        };
        (self.bytes.max(4).div_ceil(4) * 4 + guard) as u64
    }
}

struct DispatchCmd {
    pipeline: Pipeline,
    bindings: Vec<BufferId>,
    push: Vec<u8>,
    groups: [u32; 3],
}

/// What a job gives back.
#[derive(Debug)]
pub struct JobOutput {
    outputs: HashMap<BufferId, Vec<u8>>,
    /// Outputs whose guard bytes after the end were overwritten.
    pub overruns: Vec<BufferId>,
    /// GPU time of the dispatches, from timestamps, when the device has them.
    pub gpu_ns: Option<f64>,
    /// Validation-layer messages raised since the previous job (empty without validation).
    pub validation: Vec<String>,
}

impl JobOutput {
    /// The bytes of output `id` as the kernel left them.
    pub fn bytes(&self, id: BufferId) -> &[u8] {
        &self.outputs[&id]
    }

    /// Output `id` read as f32 values.
    pub fn f32s(&self, id: BufferId) -> Vec<f32> {
        self.bytes(id)
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

/// One case's worth of GPU work.
pub struct Job<'g> {
    gpu: &'g mut Gpu,
    buffers: Vec<JobBuffer>,
    dispatches: Vec<DispatchCmd>,
}

impl Job<'_> {
    /// A read-only input holding `data`.
    pub fn input(&mut self, data: &[u8]) -> BufferId {
        self.buffers.push(JobBuffer {
            bytes: data.len(),
            contents: Contents::Input(data.to_vec()),
        });
        BufferId(self.buffers.len() - 1)
    }

    /// An output of `bytes` bytes, poisoned with [`POISON_F32`] before the first dispatch.
    pub fn output(&mut self, bytes: usize) -> BufferId {
        self.buffers.push(JobBuffer {
            bytes,
            contents: Contents::Output(POISON_F32),
        });
        BufferId(self.buffers.len() - 1)
    }

    /// Appends a dispatch of `groups` workgroups. `push` is the host push-constant struct as
    /// 32-bit words; it is zero-padded to the pipeline's push size.
    pub fn dispatch(
        &mut self,
        pipeline: Pipeline,
        bindings: &[BufferId],
        push: &[u32],
        groups: [u32; 3],
    ) -> Result<()> {
        if bindings.len() as u32 != pipeline.bindings {
            return Err(GpuError::Unsupported(format!(
                "pipeline takes {} bindings, dispatch gave {}",
                pipeline.bindings,
                bindings.len()
            )));
        }
        let mut bytes: Vec<u8> = push.iter().flat_map(|w| w.to_le_bytes()).collect();
        if bytes.len() > pipeline.push_size as usize {
            return Err(GpuError::Unsupported(format!(
                "{} push-constant bytes for a {}-byte range",
                bytes.len(),
                pipeline.push_size
            )));
        }
        bytes.resize(pipeline.push_size as usize, 0);
        let max = self.gpu.device.caps.max_workgroup_count;
        if groups.iter().zip(max).any(|(&g, m)| g > m) || groups.contains(&0) {
            return Err(GpuError::Unsupported(format!(
                "dispatch of {groups:?} workgroups (device maximum {max:?})"
            )));
        }
        self.dispatches.push(DispatchCmd {
            pipeline,
            bindings: bindings.to_vec(),
            push: bytes,
            groups,
        });
        Ok(())
    }

    /// Uploads, poisons, runs every dispatch in order (with a barrier between them), reads the
    /// outputs back and checks their guards.
    pub fn submit(self) -> Result<JobOutput> {
        // A job that uses a pipeline for the first time is timed apart: lavapipe compiles a
        // pipeline's code (LLVM) only when its first dispatch runs.
        let first_uses: Vec<String> = self
            .dispatches
            .iter()
            .filter_map(|c| self.gpu.unused_pipelines.remove(&c.pipeline.raw))
            .collect();
        let _span = if first_uses.is_empty() {
            crate::profile::span("job submit (run, copies)")
        } else {
            crate::profile::first_use(first_uses.join(" + "))
        };
        let Job {
            gpu,
            mut buffers,
            dispatches,
        } = self;
        if gpu.bench.is_some() {
            for cmd in &dispatches {
                if !gpu
                    .timed_pipelines
                    .iter()
                    .any(|p| p.raw == cmd.pipeline.raw)
                {
                    gpu.timed_pipelines.push(cmd.pipeline);
                }
            }
        }
        let bench = gpu.bench.unwrap_or(BenchMode {
            warmup: 0,
            repeats: 1,
            rotations: 1,
        });
        // copies[i]: buffer i and, in bench mode, the extra copies of an input used in turn.
        let mut copies: Vec<Vec<usize>> = (0..buffers.len()).map(|i| vec![i]).collect();
        for i in 0..copies.len() {
            if let Contents::Input(data) = &buffers[i].contents {
                let data = data.clone();
                for _ in 1..bench.rotations {
                    buffers.push(JobBuffer {
                        bytes: data.len(),
                        contents: Contents::Input(data.clone()),
                    });
                    copies[i].push(buffers.len() - 1);
                }
            }
        }
        let limit = gpu.device.caps.max_storage_buffer_range as usize;
        if let Some(b) = buffers.iter().find(|b| b.bytes > limit) {
            return Err(GpuError::OutOfMemory {
                what: format!(
                    "a {}-byte buffer exceeds maxStorageBufferRange ({limit} bytes)",
                    b.bytes
                ),
            });
        }
        inject_device_loss(gpu)?;
        gpu.settle()?;
        let injected_timeout = inject_timeout(gpu);
        let staged = gpu.mode == MemoryMode::Staged;
        for (i, b) in buffers.iter().enumerate() {
            gpu.ensure_buffer(i, b.padded(), false)?;
        }
        // Staging layout: every buffer at its offset, in order.
        let offsets: Vec<u64> = buffers
            .iter()
            .scan(0u64, |acc, b| {
                Some(std::mem::replace(acc, *acc + b.padded()))
            })
            .collect();
        let total: u64 = buffers.iter().map(JobBuffer::padded).sum();
        if staged {
            gpu.ensure_buffer(0, total, true)?;
        }
        let d = &gpu.device.raw;
        let host_ptr = |i: usize| -> *mut u8 {
            if staged {
                unsafe {
                    gpu.staging
                        .as_ref()
                        .unwrap()
                        .mapped
                        .add(offsets[i] as usize)
                }
            } else {
                gpu.buffers[i].mapped
            }
        };
        for (i, b) in buffers.iter().enumerate() {
            if let Contents::Input(data) = &b.contents {
                // SAFETY: the mapped region holds at least padded() bytes; nothing else uses it now.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host_ptr(i), data.len()) };
            }
        }
        let cb = gpu.command_buffer;
        unsafe {
            d.reset_descriptor_pool(gpu.descriptor_pool, vk::DescriptorPoolResetFlags::empty())
                .during("vkResetDescriptorPool")?;
            d.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())
                .during("vkResetCommandBuffer")?;
            d.begin_command_buffer(
                cb,
                &vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )
            .during("vkBeginCommandBuffer")?;
            d.cmd_reset_query_pool(cb, gpu.query_pool, 0, 2 * bench.repeats);
            for (i, b) in buffers.iter().enumerate() {
                let dst = gpu.buffers[i].buffer;
                match b.contents {
                    Contents::Output(poison) => d.cmd_fill_buffer(cb, dst, 0, b.padded(), poison),
                    Contents::Input(_) if staged => {
                        let region = vk::BufferCopy {
                            src_offset: offsets[i],
                            dst_offset: 0,
                            size: b.padded(),
                        };
                        d.cmd_copy_buffer(cb, gpu.staging.as_ref().unwrap().buffer, dst, &[region]);
                    }
                    Contents::Input(_) => {}
                }
            }
            barrier(
                d,
                cb,
                vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::HOST,
                vk::AccessFlags::TRANSFER_WRITE | vk::AccessFlags::HOST_WRITE,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
            );
            for rep in 0..bench.warmup + bench.repeats {
                let timed = rep.checked_sub(bench.warmup);
                if rep > 0 {
                    barrier(
                        d,
                        cb,
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::SHADER_READ,
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                    );
                }
                if let Some(t) = timed {
                    // BOTTOM_OF_PIPE: written once everything before it has finished. A
                    // TOP_OF_PIPE start may be written while the previous repetition still
                    // runs, which charges part of it to this one.
                    d.cmd_write_timestamp(
                        cb,
                        vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                        gpu.query_pool,
                        2 * t,
                    );
                }
                for (n, cmd) in dispatches.iter().enumerate() {
                    if n > 0 {
                        barrier(
                            d,
                            cb,
                            vk::PipelineStageFlags::COMPUTE_SHADER,
                            vk::AccessFlags::SHADER_WRITE,
                            vk::PipelineStageFlags::COMPUTE_SHADER,
                            vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                        );
                    }
                    let layouts = [gpu.dsl];
                    let set = d
                        .allocate_descriptor_sets(
                            &vk::DescriptorSetAllocateInfo::default()
                                .descriptor_pool(gpu.descriptor_pool)
                                .set_layouts(&layouts),
                        )
                        .during("vkAllocateDescriptorSets")?[0];
                    let infos: Vec<[vk::DescriptorBufferInfo; 1]> = cmd
                        .bindings
                        .iter()
                        .map(|id| {
                            let copy = &copies[id.0];
                            let b = copy[rep as usize % copy.len()];
                            [vk::DescriptorBufferInfo {
                                buffer: gpu.buffers[b].buffer,
                                offset: 0,
                                range: buffers[b].bytes.max(4) as u64,
                            }]
                        })
                        .collect();
                    let writes: Vec<_> = infos
                        .iter()
                        .enumerate()
                        .map(|(b, info)| {
                            vk::WriteDescriptorSet::default()
                                .dst_set(set)
                                .dst_binding(b as u32)
                                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                                .buffer_info(info)
                        })
                        .collect();
                    d.update_descriptor_sets(&writes, &[]);
                    d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, cmd.pipeline.raw);
                    d.cmd_bind_descriptor_sets(
                        cb,
                        vk::PipelineBindPoint::COMPUTE,
                        cmd.pipeline.layout,
                        0,
                        &[set],
                        &[],
                    );
                    if !cmd.push.is_empty() {
                        d.cmd_push_constants(
                            cb,
                            cmd.pipeline.layout,
                            vk::ShaderStageFlags::COMPUTE,
                            0,
                            &cmd.push,
                        );
                    }
                    d.cmd_dispatch(cb, cmd.groups[0], cmd.groups[1], cmd.groups[2]);
                }
                if let Some(t) = timed {
                    d.cmd_write_timestamp(
                        cb,
                        vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                        gpu.query_pool,
                        2 * t + 1,
                    );
                }
            }
            barrier(
                d,
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::AccessFlags::SHADER_WRITE,
                vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::HOST,
                vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::HOST_READ,
            );
            if staged {
                for (i, b) in buffers.iter().enumerate() {
                    if matches!(b.contents, Contents::Output(_)) {
                        let region = vk::BufferCopy {
                            src_offset: 0,
                            dst_offset: offsets[i],
                            size: b.padded(),
                        };
                        d.cmd_copy_buffer(
                            cb,
                            gpu.buffers[i].buffer,
                            gpu.staging.as_ref().unwrap().buffer,
                            &[region],
                        );
                    }
                }
                barrier(
                    d,
                    cb,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::AccessFlags::TRANSFER_WRITE,
                    vk::PipelineStageFlags::HOST,
                    vk::AccessFlags::HOST_READ,
                );
            }
            d.end_command_buffer(cb).during("vkEndCommandBuffer")?;
            // The heater's load stops for the job (held until the job is done).
            let _paused = gpu
                .heater
                .as_ref()
                .filter(|_| gpu.bench.is_some())
                .map(|h| h.clone().pause());
            let cbs = [cb];
            d.reset_fences(&[gpu.fence]).during("vkResetFences")?;
            d.queue_submit(
                gpu.device.queue,
                &[vk::SubmitInfo::default().command_buffers(&cbs)],
                gpu.fence,
            )
            .during("vkQueueSubmit")?;
            let waited = if injected_timeout {
                Err(vk::Result::TIMEOUT)
            } else {
                gpu.wait_for_job()
            };
            match waited {
                Ok(()) => {}
                Err(vk::Result::TIMEOUT) => {
                    gpu.pending = true;
                    return Err(GpuError::DeviceLost {
                        during: format!("a job that ran past {:?} (VKDIFF_TIMEOUT_S)", gpu.timeout),
                    });
                }
                Err(code) => return Err(GpuError::vk("vkWaitForFences", code)),
            }
        }
        let mut outputs = HashMap::new();
        let mut overruns = Vec::new();
        for (i, b) in buffers.iter().enumerate() {
            if let Contents::Output(poison) = b.contents {
                // SAFETY: the fence signalled and the barrier made the writes host visible.
                let all = unsafe { std::slice::from_raw_parts(host_ptr(i), b.padded() as usize) };
                let guard = &all[all.len() - GUARD_BYTES..];
                if guard
                    .chunks_exact(4)
                    .any(|w| u32::from_le_bytes(w.try_into().unwrap()) != poison)
                {
                    overruns.push(BufferId(i));
                }
                outputs.insert(BufferId(i), all[..b.bytes].to_vec());
            }
        }
        let gpu_ns = gpu.device.caps.timestamp_period_ns.and_then(|period| {
            let mut ts = vec![0u64; 2 * bench.repeats as usize];
            unsafe {
                d.get_query_pool_results(gpu.query_pool, 0, &mut ts, vk::QueryResultFlags::TYPE_64)
            }
            .ok()?;
            let mut times: Vec<f64> = ts
                .chunks_exact(2)
                .map(|t| t[1].saturating_sub(t[0]) as f64 * period as f64)
                .collect();
            times.sort_by(f64::total_cmp);
            Some(times[times.len() / 2])
        });
        if gpu.bench.is_some() {
            gpu.last_bench_ns = gpu_ns;
        }
        inject_nondeterminism(gpu, &mut outputs);
        let validation = gpu.instance.take_messages();
        Ok(JobOutput {
            outputs,
            overruns,
            gpu_ns,
            validation,
        })
    }
}

/// `VKDIFF_INJECT_DEVICE_LOST=N` makes every Nth job of this process report a lost device: the
/// stand-in, in tests, for a GPU reset in the middle of a campaign.
fn inject_device_loss(gpu: &mut Gpu) -> Result<()> {
    let Some(every) = crate::env::env().inject_device_lost else {
        return Ok(());
    };
    gpu.jobs_run += 1;
    if every > 0 && gpu.jobs_run % every == 0 {
        return Err(GpuError::DeviceLost {
            during: "a job (injected by VKDIFF_INJECT_DEVICE_LOST)".into(),
        });
    }
    Ok(())
}

/// `VKDIFF_INJECT_TIMEOUT=N` makes every Nth job of this process count as having run past the
/// timeout as soon as it is submitted, without waiting for it: the stand-in, in tests, for a
/// job that is still running when the next one is recorded (`Gpu::settle`).
fn inject_timeout(gpu: &mut Gpu) -> bool {
    let Some(every) = crate::env::env().inject_timeout else {
        return false;
    };
    gpu.jobs_run += 1;
    every > 0 && gpu.jobs_run % every == 0
}

/// `VKDIFF_INJECT_NONDETERMINISM=1` flips the lowest bit of the first output element of every
/// second job: the stand-in, in tests, for a race that changes one element between two runs.
fn inject_nondeterminism(gpu: &mut Gpu, outputs: &mut HashMap<BufferId, Vec<u8>>) {
    if !crate::env::env().inject_nondeterminism {
        return;
    }
    gpu.jobs_run += 1;
    if gpu.jobs_run % 2 == 0 {
        if let Some(bytes) = outputs.values_mut().next() {
            bytes[0] ^= 1;
        }
    }
}

fn barrier(
    d: &ash::Device,
    cb: vk::CommandBuffer,
    src: vk::PipelineStageFlags,
    src_access: vk::AccessFlags,
    dst: vk::PipelineStageFlags,
    dst_access: vk::AccessFlags,
) {
    let mb = [vk::MemoryBarrier::default()
        .src_access_mask(src_access)
        .dst_access_mask(dst_access)];
    unsafe { d.cmd_pipeline_barrier(cb, src, dst, vk::DependencyFlags::empty(), &mb, &[], &[]) };
}
