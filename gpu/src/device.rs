//! Instance, physical-device choice, capability probing and logical-device creation.
//!
//! Like upstream, the logical device is created with every core feature the device reports
//! enabled, so shaders see the same device upstream's backend would give them. Of the optional
//! extensions (cooperative matrix 1 and 2, bf16) a device gets only those its kernels use
//! ([`Extensions`]): an extension the validation layer does not know then draws its message only
//! on the rows that need it.

use std::ffi::{c_void, CStr};
use std::sync::{Arc, Mutex};

use ash::vk;

use crate::caps::{CoopmatFlexShape, CoopmatShape, DeviceCaps};
use crate::error::{GpuError, Result, VkContext};

/// VkPhysicalDeviceCooperativeMatrix2FeaturesNV (newer than the ash release we use).
#[repr(C)]
#[derive(Clone, Copy)]
struct Coopmat2Features {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    workgroup_scope: vk::Bool32,
    flexible_dimensions: vk::Bool32,
    reductions: vk::Bool32,
    conversions: vk::Bool32,
    per_element_operations: vk::Bool32,
    tensor_addressing: vk::Bool32,
    block_loads: vk::Bool32,
}
const STYPE_COOPMAT2_FEATURES: i32 = 1_000_593_000;

/// VkCooperativeMatrixFlexibleDimensionsPropertiesNV (VK_NV_cooperative_matrix2; not in ash).
#[repr(C)]
#[derive(Clone, Copy)]
struct FlexDimProps {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    m_granularity: u32,
    n_granularity: u32,
    k_granularity: u32,
    a_type: vk::ComponentTypeKHR,
    b_type: vk::ComponentTypeKHR,
    c_type: vk::ComponentTypeKHR,
    result_type: vk::ComponentTypeKHR,
    saturating_accumulation: vk::Bool32,
    scope: vk::ScopeKHR,
    workgroup_invocations: u32,
}
const STYPE_FLEX_DIM_PROPS: i32 = 1_000_593_001;

/// VkPhysicalDeviceCooperativeMatrix2PropertiesNV (likewise).
#[repr(C)]
#[derive(Clone, Copy)]
struct Coopmat2Props {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    workgroup_scope_max_workgroup_size: u32,
    flexible_dimensions_max_dimension: u32,
    workgroup_scope_reserved_shared_memory: u32,
}
const STYPE_COOPMAT2_PROPS: i32 = 1_000_593_002;

type GetFlexDimProps =
    unsafe extern "system" fn(vk::PhysicalDevice, *mut u32, *mut FlexDimProps) -> vk::Result;

/// VkPhysicalDeviceShaderBfloat16FeaturesKHR (likewise).
#[repr(C)]
#[derive(Clone, Copy)]
struct Bf16Features {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    bf16_type: vk::Bool32,
    bf16_dot_product: vk::Bool32,
    bf16_cooperative_matrix: vk::Bool32,
}
const STYPE_BF16_FEATURES: i32 = 1_000_141_000;
/// VK_COMPONENT_TYPE_BFLOAT16_KHR.
const COMPONENT_BF16: i32 = 1_000_141_000;

const EXT_COOPMAT: &CStr = c"VK_KHR_cooperative_matrix";
const EXT_COOPMAT2: &CStr = c"VK_NV_cooperative_matrix2";
const EXT_BF16: &CStr = c"VK_KHR_shader_bfloat16";
/// Reported among the capabilities (upstream's integer-dot mat-vec path); no kernel of ours uses
/// it, so it is never enabled.
const EXT_INTEGER_DOT: &CStr = c"VK_KHR_shader_integer_dot_product";
/// Our host's own (per-pipeline robustness), enabled whenever the device has it.
const EXT_ROBUSTNESS: &CStr = c"VK_EXT_pipeline_robustness";
/// Our host's own too (compiler statistics of pipelines, for bench), enabled whenever the
/// device has it with its pipelineExecutableInfo feature.
const EXT_EXECUTABLE_PROPERTIES: &CStr = c"VK_KHR_pipeline_executable_properties";

/// The optional device extensions a kernel may use (each enabled only where the device has it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Extensions {
    /// VK_KHR_cooperative_matrix (the cm1 paths; cm2 shaders use its types too).
    pub coopmat: bool,
    /// VK_NV_cooperative_matrix2 (the cm2 paths).
    pub coopmat2: bool,
    /// VK_KHR_shader_bfloat16 (bf16 cooperative matrices).
    pub bf16: bool,
}

impl Extensions {
    /// Every optional extension (a device for any kernel: bench, fuzzing, interactive use).
    pub const ALL: Extensions = Extensions {
        coopmat: true,
        coopmat2: true,
        bf16: true,
    };
    /// None: scalar kernels.
    pub const NONE: Extensions = Extensions {
        coopmat: false,
        coopmat2: false,
        bf16: false,
    };

    /// With what its members imply: coopmat2 shaders declare coopmat1 types too.
    fn closed(self) -> Extensions {
        Extensions {
            coopmat: self.coopmat || self.coopmat2,
            ..self
        }
    }

    /// Those of `self` also in `other`.
    pub fn and(self, other: Extensions) -> Extensions {
        Extensions {
            coopmat: self.coopmat && other.coopmat,
            coopmat2: self.coopmat2 && other.coopmat2,
            bf16: self.bf16 && other.bf16,
        }
    }

    fn names(self) -> impl Iterator<Item = &'static CStr> {
        [
            (self.coopmat, EXT_COOPMAT),
            (self.coopmat2, EXT_COOPMAT2),
            (self.bf16, EXT_BF16),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
    }
}

/// The feature structs of one physical device, chained for vkGetPhysicalDeviceFeatures2 and then
/// handed unchanged to vkCreateDevice (enable everything reported). Boxed so the chain's
/// pointers stay valid while the value moves.
struct FeatureChain {
    root: Box<vk::PhysicalDeviceFeatures2<'static>>,
    v11: Box<vk::PhysicalDeviceVulkan11Features<'static>>,
    v12: Box<vk::PhysicalDeviceVulkan12Features<'static>>,
    v13: Box<vk::PhysicalDeviceVulkan13Features<'static>>,
    coopmat: Box<vk::PhysicalDeviceCooperativeMatrixFeaturesKHR<'static>>,
    robustness: Box<vk::PhysicalDevicePipelineRobustnessFeaturesEXT<'static>>,
    executable_properties: Box<vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR<'static>>,
    coopmat2: Box<Coopmat2Features>,
    bf16: Box<Bf16Features>,
}

impl FeatureChain {
    fn query(instance: &ash::Instance, pd: vk::PhysicalDevice, api: u32, exts: &[String]) -> Self {
        let mut c = FeatureChain {
            root: Box::default(),
            v11: Box::default(),
            v12: Box::default(),
            v13: Box::default(),
            coopmat: Box::default(),
            robustness: Box::default(),
            executable_properties: Box::default(),
            coopmat2: Box::new(Coopmat2Features {
                s_type: vk::StructureType::from_raw(STYPE_COOPMAT2_FEATURES),
                p_next: std::ptr::null_mut(),
                workgroup_scope: 0,
                flexible_dimensions: 0,
                reductions: 0,
                conversions: 0,
                per_element_operations: 0,
                tensor_addressing: 0,
                block_loads: 0,
            }),
            bf16: Box::new(Bf16Features {
                s_type: vk::StructureType::from_raw(STYPE_BF16_FEATURES),
                p_next: std::ptr::null_mut(),
                bf16_type: 0,
                bf16_dot_product: 0,
                bf16_cooperative_matrix: 0,
            }),
        };
        c.link(api, &|e: &CStr| {
            exts.iter().any(|x| x.as_bytes() == e.to_bytes())
        });
        // SAFETY: `link` chained live boxed Vulkan structs.
        unsafe { instance.get_physical_device_features2(pd, &mut c.root) };
        c
    }

    /// Chains the core structs and those of the extensions `has` names (query: every extension
    /// the device has; creation: the enabled ones, since a chained struct of an extension not
    /// enabled is invalid).
    fn link(&mut self, api: u32, has: &dyn Fn(&CStr) -> bool) {
        let c = self;
        // Build the pNext chain by hand: two members are raw structs ash does not know.
        let mut chain: Vec<*mut c_void> = vec![
            &mut *c.v11 as *mut _ as *mut c_void,
            &mut *c.v12 as *mut _ as *mut c_void,
        ];
        if api >= vk::API_VERSION_1_3 {
            chain.push(&mut *c.v13 as *mut _ as *mut c_void);
        }
        if has(EXT_COOPMAT) {
            chain.push(&mut *c.coopmat as *mut _ as *mut c_void);
        }
        if has(EXT_ROBUSTNESS) {
            chain.push(&mut *c.robustness as *mut _ as *mut c_void);
        }
        if has(EXT_EXECUTABLE_PROPERTIES) {
            chain.push(&mut *c.executable_properties as *mut _ as *mut c_void);
        }
        if has(EXT_COOPMAT2) {
            chain.push(&mut *c.coopmat2 as *mut _ as *mut c_void);
        }
        if has(EXT_BF16) {
            chain.push(&mut *c.bf16 as *mut _ as *mut c_void);
        }
        // SAFETY: every pointer is a live boxed Vulkan struct starting with sType/pNext.
        unsafe {
            for pair in chain.windows(2) {
                (*(pair[0] as *mut vk::BaseOutStructure)).p_next =
                    pair[1] as *mut vk::BaseOutStructure;
            }
            (*(chain[chain.len() - 1] as *mut vk::BaseOutStructure)).p_next = std::ptr::null_mut();
            c.root.p_next = chain[0];
        }
    }
}

/// A physical device as enumerated, before a logical device exists.
#[derive(Debug, Clone)]
pub struct Adapter {
    /// Index in enumeration order (what `--device N` selects).
    pub index: usize,
    /// The handle.
    pub handle: vk::PhysicalDevice,
    /// Its capabilities.
    pub caps: DeviceCaps,
    extensions: Vec<String>,
}

/// The loaded Vulkan library and instance, shared by every device context.
pub struct Instance {
    pub(crate) entry: ash::Entry,
    pub(crate) raw: ash::Instance,
    validation: Option<Validation>,
}

/// Validation messages collected by the debug messenger, drained by whoever runs a job.
pub type Messages = Arc<Mutex<Vec<String>>>;

struct Validation {
    loader: ash::ext::debug_utils::Instance,
    messenger: vk::DebugUtilsMessengerEXT,
    /// Owned by the messenger's user-data pointer; freed after the messenger is destroyed.
    messages: *const Mutex<Vec<String>>,
}

/// The validation layer's version ("1.3.239"), set when the layer is enabled.
static LAYER_VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    if !severity.intersects(
        vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
            | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
    ) {
        return vk::FALSE;
    }
    // SAFETY: the layer passes valid callback data; `user` is the Mutex leaked in Instance::new.
    let text = unsafe { (*data).message_as_c_str() }
        .map(|m| m.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = match crate::layer_messages::classify(&text) {
        crate::layer_messages::LayerMessage::Finding => text,
        crate::layer_messages::LayerMessage::Predates(what) => {
            let version = LAYER_VERSION.get().map_or("?", String::as_str);
            crate::layer_messages::unvalidated_line(&what, version)
        }
        crate::layer_messages::LayerMessage::LoaderLookup(f) => {
            // The loader's lookup in vkCreateDevice, not ours: said once, judged never.
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                eprintln!(
                    "vkdiff: note: the Vulkan loader looked up the instance-level {f} through \
                     vkGetDeviceProcAddr while creating the device (not a call of ours; ignored)"
                );
            }
            return vk::FALSE;
        }
    };
    // Also to stderr at once: if the driver then crashes, the message survives in the log
    // (campaign workers keep their last stderr lines for the crash report).
    eprintln!("vkdiff: validation: {text}");
    let messages = unsafe { &*(user as *const Mutex<Vec<String>>) };
    messages.lock().unwrap_or_else(|p| p.into_inner()).push(
        if text.starts_with(crate::layer_messages::UNVALIDATED) {
            // Kept bare: `only_unvalidated` recognises these lines by their start (with the
            // severity in front, every validated H100 device creation failed).
            text
        } else {
            format!("{severity:?}: {text}")
        },
    );
    vk::FALSE
}

impl Instance {
    /// Loads libvulkan and creates an instance (Vulkan 1.3 where the loader has it).
    pub fn new() -> Result<Self> {
        // SAFETY: loading the system Vulkan loader; failures are reported, not unwound.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| GpuError::NoLoader(e.to_string()))?;
        let version = unsafe { entry.try_enumerate_instance_version() }
            .during("vkEnumerateInstanceVersion")?
            .unwrap_or(vk::API_VERSION_1_0);
        let api = version.min(vk::API_VERSION_1_3);
        let app = vk::ApplicationInfo::default()
            .application_name(c"vkdiff")
            .api_version(api);
        let layers = validation_layers(&entry);
        let layer_ptrs: Vec<_> = layers.iter().map(|l| l.as_ptr()).collect();
        let validating = !layers.is_empty();
        let mut enables = vec![vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        if crate::env::env().gpu_assisted_validation() {
            enables.push(vk::ValidationFeatureEnableEXT::GPU_ASSISTED);
        }
        let mut features =
            vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
        let exts = [ash::ext::debug_utils::NAME.as_ptr()];
        let mut ci = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_ptrs);
        if validating {
            ci = ci.enabled_extension_names(&exts).push_next(&mut features);
        }
        let raw = unsafe { entry.create_instance(&ci, None) }.during("vkCreateInstance")?;
        let validation = if validating {
            let loader = ash::ext::debug_utils::Instance::new(&entry, &raw);
            let messages = Arc::into_raw(Messages::default());
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                        | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(on_message))
                .user_data(messages as *mut c_void);
            let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) }
                .during("vkCreateDebugUtilsMessengerEXT")?;
            Some(Validation {
                loader,
                messenger,
                messages,
            })
        } else {
            None
        };
        Ok(Instance {
            entry,
            raw,
            validation,
        })
    }

    /// Takes the validation messages collected so far (always empty without validation).
    pub fn take_messages(&self) -> Vec<String> {
        match &self.validation {
            // SAFETY: the pointer stays valid until Drop destroys the messenger.
            Some(v) => std::mem::take(
                &mut *unsafe { &*v.messages }
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()),
            ),
            None => vec![],
        }
    }

    /// True when the Khronos validation layer is active.
    pub fn validating(&self) -> bool {
        self.validation.is_some()
    }

    /// Every physical device with its capabilities, in enumeration order.
    pub fn adapters(&self) -> Result<Vec<Adapter>> {
        let pds = unsafe { self.raw.enumerate_physical_devices() }
            .during("vkEnumeratePhysicalDevices")?;
        pds.into_iter()
            .enumerate()
            .map(|(index, pd)| self.probe(index, pd))
            .collect()
    }

    /// Picks a device: `selector` is an index or a case-insensitive name substring; without one,
    /// `VKDIFF_DEVICE` is consulted, and otherwise the first discrete GPU, else the first device.
    pub fn select(&self, selector: Option<&str>) -> Result<Adapter> {
        let adapters = self.adapters()?;
        if adapters.is_empty() {
            return Err(GpuError::NoDevice(
                "the loader found no Vulkan devices (is mesa-vulkan-drivers installed?)".into(),
            ));
        }
        let env = crate::env::env().device.clone();
        let names = || {
            adapters
                .iter()
                .map(|a| format!("{}: {}", a.index, a.caps.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match selector.or(env.as_deref()) {
            Some(sel) => {
                let found = match sel.parse::<usize>() {
                    Ok(i) => adapters.get(i).cloned(),
                    Err(_) => adapters
                        .iter()
                        .find(|a| a.caps.name.to_lowercase().contains(&sel.to_lowercase()))
                        .cloned(),
                };
                found.ok_or_else(|| {
                    GpuError::NoDevice(format!("no device matches {sel:?}; devices: {}", names()))
                })
            }
            None => Ok(adapters
                .iter()
                .find(|a| a.caps.kind == "discrete")
                .unwrap_or(&adapters[0])
                .clone()),
        }
    }

    fn probe(&self, index: usize, pd: vk::PhysicalDevice) -> Result<Adapter> {
        let inst = &self.raw;
        let exts: Vec<String> = unsafe { inst.enumerate_device_extension_properties(pd) }
            .during("vkEnumerateDeviceExtensionProperties")?
            .iter()
            .map(|e| {
                e.extension_name_as_c_str()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let has = |e: &CStr| exts.iter().any(|x| x.as_bytes() == e.to_bytes());

        let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
        let mut size_control = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut idot = vk::PhysicalDeviceShaderIntegerDotProductProperties::default();
        let mut float_controls = vk::PhysicalDeviceFloatControlsProperties::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default()
            .push_next(&mut subgroup)
            .push_next(&mut driver);
        let base_api = unsafe { inst.get_physical_device_properties(pd) }.api_version;
        if base_api >= vk::API_VERSION_1_2 {
            props2 = props2.push_next(&mut float_controls);
        }
        if base_api >= vk::API_VERSION_1_3 {
            props2 = props2.push_next(&mut size_control).push_next(&mut idot);
        }
        unsafe { inst.get_physical_device_properties2(pd, &mut props2) };
        let p = props2.properties;
        let features = FeatureChain::query(inst, pd, p.api_version, &exts);
        let f = &features;

        let compute = |ops: vk::SubgroupFeatureFlags| {
            subgroup
                .supported_stages
                .contains(vk::ShaderStageFlags::COMPUTE)
                && subgroup.supported_operations.contains(ops)
        };
        let coopmat = has(EXT_COOPMAT) && f.coopmat.cooperative_matrix == vk::TRUE;
        let coopmat_shapes = if coopmat {
            self.coopmat_shapes(pd)
        } else {
            vec![]
        };
        let (coopmat2_flexible, coopmat2_max_dimension) = if has(EXT_COOPMAT2) {
            self.coopmat2_flexible(pd)
        } else {
            (vec![], 0)
        };
        let limits = p.limits;
        let caps = DeviceCaps {
            name: p
                .device_name_as_c_str()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            driver: format!(
                "{} {}",
                driver
                    .driver_name_as_c_str()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                driver
                    .driver_info_as_c_str()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ),
            kind: match p.device_type {
                vk::PhysicalDeviceType::DISCRETE_GPU => "discrete",
                vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated",
                vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual",
                vk::PhysicalDeviceType::CPU => "cpu",
                _ => "other",
            }
            .into(),
            api_version: (
                vk::api_version_major(p.api_version),
                vk::api_version_minor(p.api_version),
                vk::api_version_patch(p.api_version),
            ),
            subgroup_size: subgroup.subgroup_size,
            subgroup_size_range: (f.v13.subgroup_size_control == vk::TRUE).then_some((
                size_control.min_subgroup_size,
                size_control.max_subgroup_size,
            )),
            full_subgroups: f.v13.compute_full_subgroups == vk::TRUE,
            subgroup_shuffle: compute(vk::SubgroupFeatureFlags::SHUFFLE),
            subgroup_arithmetic: compute(vk::SubgroupFeatureFlags::ARITHMETIC),
            subgroup_clustered: compute(vk::SubgroupFeatureFlags::CLUSTERED),
            shared_memory: limits.max_compute_shared_memory_size,
            max_workgroup_count: limits.max_compute_work_group_count,
            max_workgroup_invocations: limits.max_compute_work_group_invocations,
            max_storage_buffer_range: limits.max_storage_buffer_range,
            fp16: f.v12.shader_float16 == vk::TRUE,
            int8: f.v12.shader_int8 == vk::TRUE,
            int16: f.root.features.shader_int16 == vk::TRUE,
            int64: f.root.features.shader_int64 == vk::TRUE,
            storage8: f.v12.storage_buffer8_bit_access == vk::TRUE,
            storage16: f.v11.storage_buffer16_bit_access == vk::TRUE,
            integer_dot: (has(EXT_INTEGER_DOT) || p.api_version >= vk::API_VERSION_1_3)
                && idot.integer_dot_product4x8_bit_packed_signed_accelerated == vk::TRUE,
            coopmat,
            coopmat_shapes,
            coopmat2: has(EXT_COOPMAT2) && {
                let c = &f.coopmat2;
                [
                    c.workgroup_scope,
                    c.flexible_dimensions,
                    c.reductions,
                    c.conversions,
                    c.per_element_operations,
                    c.tensor_addressing,
                    c.block_loads,
                ]
                .iter()
                .all(|&b| b == vk::TRUE)
                    && f.v12.buffer_device_address == vk::TRUE
                    && crate::caps::coopmat2_flexible_ok(&coopmat2_flexible, coopmat2_max_dimension)
            },
            coopmat2_flexible,
            coopmat2_max_dimension,
            bf16: has(EXT_BF16) && f.bf16.bf16_type == vk::TRUE,
            bf16_coopmat: has(EXT_BF16) && f.bf16.bf16_cooperative_matrix == vk::TRUE,
            pipeline_robustness: has(EXT_ROBUSTNESS)
                && f.robustness.pipeline_robustness == vk::TRUE,
            pipeline_statistics: has(EXT_EXECUTABLE_PROPERTIES)
                && f.executable_properties.pipeline_executable_info == vk::TRUE,
            timestamp_period_ns: (limits.timestamp_compute_and_graphics == vk::TRUE)
                .then_some(limits.timestamp_period),
            inf_nan_preserve_f16: float_controls.shader_signed_zero_inf_nan_preserve_float16
                == vk::TRUE,
            inf_nan_preserve_f32: float_controls.shader_signed_zero_inf_nan_preserve_float32
                == vk::TRUE,
        };
        Ok(Adapter {
            index,
            handle: pd,
            caps,
            extensions: exts,
        })
    }

    /// The workgroup-scope flexible-dimension shapes of VK_NV_cooperative_matrix2 and
    /// cooperativeMatrixFlexibleDimensionsMaxDimension.
    fn coopmat2_flexible(&self, pd: vk::PhysicalDevice) -> (Vec<CoopmatFlexShape>, u32) {
        let name = c"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV";
        // SAFETY: a valid instance and a NUL-terminated name; the pointer is the function
        // the extension defines, with the signature declared above.
        let Some(f) = (unsafe {
            self.entry
                .get_instance_proc_addr(self.raw.handle(), name.as_ptr())
        }) else {
            return (vec![], 0);
        };
        let f: GetFlexDimProps = unsafe { std::mem::transmute(f) };
        let blank = FlexDimProps {
            s_type: vk::StructureType::from_raw(STYPE_FLEX_DIM_PROPS),
            p_next: std::ptr::null_mut(),
            m_granularity: 0,
            n_granularity: 0,
            k_granularity: 0,
            a_type: vk::ComponentTypeKHR::FLOAT16,
            b_type: vk::ComponentTypeKHR::FLOAT16,
            c_type: vk::ComponentTypeKHR::FLOAT16,
            result_type: vk::ComponentTypeKHR::FLOAT16,
            saturating_accumulation: 0,
            scope: vk::ScopeKHR::WORKGROUP,
            workgroup_invocations: 0,
        };
        let mut n = 0u32;
        let mut props = Vec::new();
        // SAFETY: the usual two-call enumeration into correctly typed, sType-initialised structs.
        unsafe {
            if f(pd, &mut n, std::ptr::null_mut()) == vk::Result::SUCCESS {
                props = vec![blank; n as usize];
                if f(pd, &mut n, props.as_mut_ptr()) != vk::Result::SUCCESS {
                    props.clear();
                }
                props.truncate(n as usize);
            }
        }
        let shapes = props
            .iter()
            .map(|p| CoopmatFlexShape {
                m_granularity: p.m_granularity,
                n_granularity: p.n_granularity,
                k_granularity: p.k_granularity,
                ab: component_name(p.a_type),
                c: component_name(p.c_type),
                result: component_name(p.result_type),
                workgroup_scope: p.scope == vk::ScopeKHR::WORKGROUP,
                invocations: p.workgroup_invocations,
            })
            .collect();
        let mut c2 = Coopmat2Props {
            s_type: vk::StructureType::from_raw(STYPE_COOPMAT2_PROPS),
            p_next: std::ptr::null_mut(),
            workgroup_scope_max_workgroup_size: 0,
            flexible_dimensions_max_dimension: 0,
            workgroup_scope_reserved_shared_memory: 0,
        };
        let mut props2 = vk::PhysicalDeviceProperties2 {
            p_next: &mut c2 as *mut Coopmat2Props as *mut c_void,
            ..Default::default()
        };
        // SAFETY: the chain holds one struct starting with sType/pNext, alive for the call.
        unsafe { self.raw.get_physical_device_properties2(pd, &mut props2) };
        (shapes, c2.flexible_dimensions_max_dimension)
    }

    fn coopmat_shapes(&self, pd: vk::PhysicalDevice) -> Vec<CoopmatShape> {
        let ext = ash::khr::cooperative_matrix::Instance::new(&self.entry, &self.raw);
        let props = unsafe { ext.get_physical_device_cooperative_matrix_properties(pd) }
            .unwrap_or_default();
        props
            .iter()
            .map(|p| CoopmatShape {
                m: p.m_size,
                n: p.n_size,
                k: p.k_size,
                ab: component_name(p.a_type),
                c: component_name(p.c_type),
                subgroup_scope: p.scope == vk::ScopeKHR::SUBGROUP,
            })
            .collect()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(v) = self.validation.take() {
            unsafe {
                v.loader.destroy_debug_utils_messenger(v.messenger, None);
                drop(Arc::from_raw(v.messages));
            }
        }
        unsafe { self.raw.destroy_instance(None) };
    }
}

fn component_name(t: vk::ComponentTypeKHR) -> String {
    match t {
        vk::ComponentTypeKHR::FLOAT16 => "f16".into(),
        vk::ComponentTypeKHR::FLOAT32 => "f32".into(),
        vk::ComponentTypeKHR::FLOAT64 => "f64".into(),
        vk::ComponentTypeKHR::SINT8 => "i8".into(),
        vk::ComponentTypeKHR::UINT8 => "u8".into(),
        vk::ComponentTypeKHR::SINT32 => "i32".into(),
        vk::ComponentTypeKHR::UINT32 => "u32".into(),
        t if t.as_raw() == COMPONENT_BF16 => "bf16".into(),
        t => format!("{t:?}"),
    }
}

/// The Khronos validation layer's name.
const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

fn find_layer(entry: &ash::Entry, layer: &CStr) -> Option<vk::LayerProperties> {
    let available = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
    available
        .into_iter()
        .find(|l| l.layer_name_as_c_str() == Ok(layer))
}

/// Whether the Vulkan loader finds the Khronos validation layer (tests that need it are
/// ignored, not passed, without it).
pub fn validation_layer_installed() -> bool {
    unsafe { ash::Entry::load() }.is_ok_and(|entry| find_layer(&entry, VALIDATION_LAYER).is_some())
}

/// Whether `VKDIFF_VALIDATE` asks for the validation layer (`1`, or `gpu` for GPU-assisted
/// validation too); any other value, `0` included, means no layer.
pub fn validation_requested() -> bool {
    crate::env::env().validation_requested()
}

/// Khronos validation with synchronization validation, when `VKDIFF_VALIDATE` is `1` (or
/// `gpu`: also GPU-assisted validation) and the layer is installed.
fn validation_layers(entry: &ash::Entry) -> Vec<&'static CStr> {
    const LAYER: &CStr = VALIDATION_LAYER;
    if !validation_requested() {
        return vec![];
    }
    if let Some(l) = find_layer(entry, LAYER) {
        let v = l.spec_version;
        let _ = LAYER_VERSION.set(format!(
            "{}.{}.{}",
            vk::api_version_major(v),
            vk::api_version_minor(v),
            vk::api_version_patch(v)
        ));
        vec![LAYER]
    } else {
        eprintln!("vkdiff: VKDIFF_VALIDATE=1 but {LAYER:?} is not installed (apt-get install vulkan-validationlayers)");
        vec![]
    }
}

/// The logical device and its one compute queue.
pub struct Device {
    pub(crate) raw: ash::Device,
    pub(crate) queue: vk::Queue,
    pub(crate) queue_family: u32,
    pub(crate) memory: vk::PhysicalDeviceMemoryProperties,
    /// Capabilities of the device.
    pub caps: DeviceCaps,
    /// The optional extensions enabled (those asked for that the device has).
    pub extensions: Extensions,
    /// The optional extensions the device has.
    pub available: Extensions,
}

impl Device {
    /// Whether a device opened with `wanted` would enable other extensions than this one.
    pub fn differs_for(&self, wanted: Extensions) -> bool {
        self.extensions != wanted.closed().and(self.available)
    }
}

impl Device {
    /// Creates the logical device for `adapter` with every reported core feature enabled and,
    /// of the optional extensions, those in `wanted` that the device has.
    pub fn new(instance: &Instance, adapter: &Adapter, wanted: Extensions) -> Result<Self> {
        let inst = &instance.raw;
        let pd = adapter.handle;
        let families = unsafe { inst.get_physical_device_queue_family_properties(pd) };
        let queue_family = families
            .iter()
            .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or_else(|| {
                GpuError::NoDevice(format!("{} has no compute queue", adapter.caps.name))
            })? as u32;
        let api = unsafe { inst.get_physical_device_properties(pd) }.api_version;
        if api < vk::API_VERSION_1_2 {
            return Err(GpuError::Unsupported(format!(
                "{} is Vulkan {}.{}; the kernels need 1.2",
                adapter.caps.name,
                vk::api_version_major(api),
                vk::api_version_minor(api)
            )));
        }
        let mut features = FeatureChain::query(inst, pd, api, &adapter.extensions);
        let has = |w: &CStr| {
            adapter
                .extensions
                .iter()
                .any(|e| e.as_bytes() == w.to_bytes())
        };
        let available = Extensions {
            coopmat: has(EXT_COOPMAT),
            coopmat2: has(EXT_COOPMAT2),
            bf16: has(EXT_BF16),
        };
        let extensions = wanted.closed().and(available);
        let enabled: Vec<&CStr> = extensions
            .names()
            .chain([EXT_ROBUSTNESS])
            .filter(|w| has(w))
            .chain(
                adapter
                    .caps
                    .pipeline_statistics
                    .then_some(EXT_EXECUTABLE_PROPERTIES),
            )
            .collect();
        features.link(api, &|e: &CStr| enabled.contains(&e));
        let ext_ptrs: Vec<_> = enabled.iter().map(|w| w.as_ptr()).collect();
        let priorities = [1.0f32];
        let queue_ci = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];
        let mut ci = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_ci)
            .enabled_extension_names(&ext_ptrs);
        ci.p_next = &mut *features.root as *mut _ as *const c_void;
        let raw = unsafe { inst.create_device(pd, &ci, None) }.during("vkCreateDevice")?;
        let queue = unsafe { raw.get_device_queue(queue_family, 0) };
        let memory = unsafe { inst.get_physical_device_memory_properties(pd) };
        Ok(Device {
            raw,
            queue,
            queue_family,
            memory,
            caps: adapter.caps.clone(),
            extensions,
            available,
        })
    }

    /// Index of a memory type allowed by `bits` with all of `flags`.
    pub(crate) fn memory_type(&self, bits: u32, flags: vk::MemoryPropertyFlags) -> Option<u32> {
        (0..self.memory.memory_type_count).find(|&i| {
            bits & (1 << i) != 0
                && self.memory.memory_types[i as usize]
                    .property_flags
                    .contains(flags)
        })
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        unsafe {
            let _ = self.raw.device_wait_idle();
            self.raw.destroy_device(None);
        }
    }
}
