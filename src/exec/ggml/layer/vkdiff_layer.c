/* vkdiff's own Vulkan layer (VK_LAYER_VKDIFF_probe), loaded into ggml worker processes only.
 *
 * Three jobs, described in docs/ggml-backend.md ("vkdiff's Vulkan layer"):
 *
 * 1. Integer-dot override. With VKDIFF_LAYER_INTDOT=1 in the environment,
 *    vkGetPhysicalDeviceProperties2(KHR) reports
 *    integerDotProduct4x8BitPackedSignedAccelerated = VK_TRUE (in the integer-dot property
 *    struct and in the Vulkan 1.3 one), but only on a device that executes the operation:
 *    it advertises VK_KHR_shader_integer_dot_product or Vulkan 1.3, and its
 *    shaderIntegerDotProduct feature is on. The flag is a performance hint; the instructions
 *    behind it are what the feature promises. Nothing else is changed.
 *
 * 2. Pipeline recording. vkCreateShaderModule hashes the SPIR-V (FNV-1a 64 over the bytes,
 *    raw, and once more with ggml's run-time float-controls additions left out, see
 *    `normalised_hash`); vkCreateComputePipelines maps each pipeline to its module's hashes;
 *    vkSetDebugUtilsObjectNameEXT attaches a name to a pipeline; vkCmdBindPipeline (compute)
 *    adds the pipeline's hashes to the set bound since the last vkdiff_layer_take_bound().
 *
 * 3. Fence polls that sleep, on CPU devices only. ggml waits for a graph by polling
 *    vkGetFenceStatus in a busy loop. On lavapipe the device is the same CPU cores: the poll
 *    took half of a 2-core machine's samples while the driver compiled and ran the pipelines.
 *    Here a poll that finds the fence unsignalled first blocks in vkWaitForFences for at most
 *    FENCE_NAP_NS, then answers the fence's status then. ggml sees only true answers, later.
 *
 * The worker finds the exported functions with dlopen(RTLD_NOLOAD) of this library's path,
 * which is the one the manifest gives the loader. All shared state is under one mutex.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>

#define EXPORT __attribute__((visibility("default")))
#define LAYER_NAME "VK_LAYER_VKDIFF_probe"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Dispatchable handles begin with the loader's dispatch table pointer: the key layers use. */
static void *key_of(const void *handle) { return *(void *const *)handle; }

/* ---- instances and devices ------------------------------------------------------------- */

struct instance {
    void *key;
    VkInstance handle;
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkDestroyInstance destroy;
    PFN_vkGetPhysicalDeviceProperties2 props2;
    PFN_vkGetPhysicalDeviceProperties2 props2_khr;
    PFN_vkGetPhysicalDeviceFeatures2 features2;
    PFN_vkGetPhysicalDeviceProperties props;
    PFN_vkEnumerateDeviceExtensionProperties extensions;
    struct instance *next;
};

struct device {
    void *key;
    VkDevice handle;
    PFN_vkGetDeviceProcAddr gdpa;
    PFN_vkDestroyDevice destroy;
    PFN_vkCreateShaderModule create_module;
    PFN_vkCreateComputePipelines create_compute;
    PFN_vkCmdBindPipeline bind;
    PFN_vkSetDebugUtilsObjectNameEXT set_name;
    PFN_vkGetFenceStatus fence_status;
    PFN_vkWaitForFences wait_fences;
    int cpu; /* VK_PHYSICAL_DEVICE_TYPE_CPU: polls of its fences sleep (job 3) */
    struct device *next;
};

static struct instance *instances;
static struct device *devices;

static struct instance *instance_of(const void *handle) {
    void *key = key_of(handle);
    pthread_mutex_lock(&lock);
    struct instance *i = instances;
    while (i && i->key != key) i = i->next;
    /* A physical device whose key is not an instance's (a loader that wraps them): every
     * instance of the process reaches the same drivers, so the newest one serves. */
    if (!i) i = instances;
    pthread_mutex_unlock(&lock);
    return i;
}

static struct device *device_of(const void *handle) {
    void *key = key_of(handle);
    pthread_mutex_lock(&lock);
    struct device *d = devices;
    while (d && d->key != key) d = d->next;
    pthread_mutex_unlock(&lock);
    return d;
}

/* ---- hashes ------------------------------------------------------------------------------ */

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

/* SPIR-V opcodes and operands of the float-controls additions ggml (recent trees) makes at run
 * time on devices with fp16 RTE rounding or denorm preservation. */
enum { OP_EXTENSION = 10, OP_EXECUTION_MODE = 16, OP_CAPABILITY = 17 };
enum { CAP_DENORM_PRESERVE = 4464, CAP_ROUNDING_RTE = 4467 };
enum { MODE_DENORM_PRESERVE = 4459, MODE_ROUNDING_RTE = 4462 };

static int float_controls_addition(const uint32_t *w, uint32_t len) {
    uint32_t op = w[0] & 0xffff;
    if (op == OP_CAPABILITY && len == 2)
        return w[1] == CAP_DENORM_PRESERVE || w[1] == CAP_ROUNDING_RTE;
    if (op == OP_EXECUTION_MODE && len == 4)
        return (w[2] == MODE_DENORM_PRESERVE || w[2] == MODE_ROUNDING_RTE) && w[3] == 16;
    if (op == OP_EXTENSION && len >= 2) {
        static const char name[] = "SPV_KHR_float_controls";
        size_t bytes = (size_t)(len - 1) * 4;
        return bytes >= sizeof name && memcmp(&w[1], name, sizeof name) == 0;
    }
    return 0;
}

/* FNV-1a 64 over the module's bytes less those instructions (vkdiff's Rust side computes the
 * same over the library's modules, so a patched module still finds its name). */
static uint64_t normalised_hash(const uint32_t *w, size_t words) {
    if (words < 5) return fnv(FNV_OFFSET, w, words * 4);
    uint64_t h = fnv(FNV_OFFSET, w, 5 * 4);
    size_t pos = 5;
    while (pos < words) {
        uint32_t len = w[pos] >> 16;
        if (len == 0 || pos + len > words) { /* malformed: hash the rest as it is */
            return fnv(h, &w[pos], (words - pos) * 4);
        }
        if (!float_controls_addition(&w[pos], len)) h = fnv(h, &w[pos], (size_t)len * 4);
        pos += len;
    }
    return h;
}

/* ---- modules, pipelines, the bound set ---------------------------------------------------- */

#define NAME_CAP 96

struct entry { /* a shader module or a pipeline, by handle */
    uint64_t handle;
    uint64_t raw, norm;
    char name[NAME_CAP];
    struct entry *next;
};

#define BUCKETS 4096
static struct entry *modules[BUCKETS];
static struct entry *pipelines[BUCKETS];

static size_t bucket(uint64_t h) { return (size_t)((h ^ (h >> 17) ^ (h >> 33)) % BUCKETS); }

/* Under the lock. */
static struct entry *find(struct entry **table, uint64_t handle) {
    struct entry *e = table[bucket(handle)];
    while (e && e->handle != handle) e = e->next;
    return e;
}

/* Under the lock: the entry for `handle`, created (or reset: a handle value reused after a
 * destroy) with these hashes. */
static struct entry *put(struct entry **table, uint64_t handle, uint64_t raw, uint64_t norm) {
    struct entry *e = find(table, handle);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e) return NULL;
        e->handle = handle;
        e->next = table[bucket(handle)];
        table[bucket(handle)] = e;
    }
    e->raw = raw;
    e->norm = norm;
    e->name[0] = 0;
    return e;
}

/* What the worker reads back: one bound module. */
struct vkdiff_bound {
    uint64_t raw;
    uint64_t norm;
    char name[NAME_CAP];
};

static struct vkdiff_bound *bound;
static size_t bound_len, bound_cap;
static int intdot_applied;

/* Under the lock. */
static void add_bound(const struct entry *p) {
    for (size_t i = 0; i < bound_len; i++)
        if (bound[i].raw == p->raw && strcmp(bound[i].name, p->name) == 0) return;
    if (bound_len == bound_cap) {
        size_t cap = bound_cap ? 2 * bound_cap : 64;
        struct vkdiff_bound *b = realloc(bound, cap * sizeof *b);
        if (!b) return;
        bound = b;
        bound_cap = cap;
    }
    bound[bound_len].raw = p->raw;
    bound[bound_len].norm = p->norm;
    memcpy(bound[bound_len].name, p->name, NAME_CAP);
    bound_len++;
}

/* Copies up to `cap` modules bound (compute) since the last call into `out`, empties the set,
 * and returns how many there were (more than `cap`: the rest are lost). */
EXPORT size_t vkdiff_layer_take_bound(struct vkdiff_bound *out, size_t cap) {
    pthread_mutex_lock(&lock);
    size_t n = bound_len;
    memcpy(out, bound, (n < cap ? n : cap) * sizeof *out);
    bound_len = 0;
    pthread_mutex_unlock(&lock);
    return n;
}

/* 1 once the integer-dot override changed a property query's answer in this process. */
EXPORT int vkdiff_layer_intdot_applied(void) {
    pthread_mutex_lock(&lock);
    int a = intdot_applied;
    pthread_mutex_unlock(&lock);
    return a;
}

/* The layer's version of the struct above, for the worker to check it reads the same layout. */
EXPORT size_t vkdiff_layer_bound_size(void) { return sizeof(struct vkdiff_bound); }

/* ---- the integer-dot override ----------------------------------------------------------- */

static int override_requested(void) {
    const char *v = getenv("VKDIFF_LAYER_INTDOT");
    return v && strcmp(v, "1") == 0;
}

/* Whether the device executes VK_KHR_shader_integer_dot_product's operations. */
static int executes_integer_dot(struct instance *inst, VkPhysicalDevice pd) {
    VkPhysicalDeviceProperties p;
    inst->props(pd, &p);
    int api13 = VK_API_VERSION_MINOR(p.apiVersion) >= 3 || VK_API_VERSION_MAJOR(p.apiVersion) > 1;
    int ext = 0;
    uint32_t n = 0;
    if (inst->extensions(pd, NULL, &n, NULL) == VK_SUCCESS && n) {
        VkExtensionProperties *e = calloc(n, sizeof *e);
        if (e && inst->extensions(pd, NULL, &n, e) >= 0)
            for (uint32_t i = 0; i < n; i++)
                if (strcmp(e[i].extensionName, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME) == 0)
                    ext = 1;
        free(e);
    }
    if (!(api13 || ext) || !inst->features2) return 0;
    VkPhysicalDeviceShaderIntegerDotProductFeatures f = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &f};
    inst->features2(pd, &f2);
    return f.shaderIntegerDotProduct == VK_TRUE;
}

static void override_intdot(struct instance *inst, VkPhysicalDevice pd,
                            VkPhysicalDeviceProperties2 *props) {
    if (!override_requested()) return;
    int checked = 0, changed = 0;
    for (VkBaseOutStructure *s = (VkBaseOutStructure *)props->pNext; s; s = s->pNext) {
        VkBool32 *flag = NULL;
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES)
            flag = &((VkPhysicalDeviceShaderIntegerDotProductProperties *)s)
                        ->integerDotProduct4x8BitPackedSignedAccelerated;
        else if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES)
            flag = &((VkPhysicalDeviceVulkan13Properties *)s)
                        ->integerDotProduct4x8BitPackedSignedAccelerated;
        if (!flag || *flag == VK_TRUE) continue;
        if (!checked) {
            checked = 1;
            if (!executes_integer_dot(inst, pd)) return;
        }
        *flag = VK_TRUE;
        changed = 1;
    }
    if (changed) {
        pthread_mutex_lock(&lock);
        intdot_applied = 1;
        pthread_mutex_unlock(&lock);
    }
}

static VKAPI_ATTR void VKAPI_CALL props2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2 *p) {
    struct instance *inst = instance_of(pd);
    inst->props2(pd, p);
    override_intdot(inst, pd, p);
}

static VKAPI_ATTR void VKAPI_CALL props2_khr(VkPhysicalDevice pd, VkPhysicalDeviceProperties2 *p) {
    struct instance *inst = instance_of(pd);
    (inst->props2_khr ? inst->props2_khr : inst->props2)(pd, p);
    override_intdot(inst, pd, p);
}

/* ---- device-level recording --------------------------------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL create_module(VkDevice dev, const VkShaderModuleCreateInfo *ci,
                                                    const VkAllocationCallbacks *a, VkShaderModule *out) {
    struct device *d = device_of(dev);
    VkResult r = d->create_module(dev, ci, a, out);
    if (r == VK_SUCCESS) {
        uint64_t raw = fnv(FNV_OFFSET, ci->pCode, ci->codeSize);
        uint64_t norm = normalised_hash(ci->pCode, ci->codeSize / 4);
        pthread_mutex_lock(&lock);
        put(modules, (uint64_t)(uintptr_t)*out, raw, norm);
        pthread_mutex_unlock(&lock);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL create_compute(VkDevice dev, VkPipelineCache cache, uint32_t n,
                                                     const VkComputePipelineCreateInfo *ci,
                                                     const VkAllocationCallbacks *a, VkPipeline *out) {
    struct device *d = device_of(dev);
    VkResult r = d->create_compute(dev, cache, n, ci, a, out);
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < n; i++) {
        if (out[i] == VK_NULL_HANDLE) continue;
        uint64_t raw = 0, norm = 0;
        struct entry *m = find(modules, (uint64_t)(uintptr_t)ci[i].stage.module);
        if (m) {
            raw = m->raw;
            norm = m->norm;
        } else {
            /* maintenance5: the module's create info chained to the stage instead. */
            for (const VkBaseInStructure *s = ci[i].stage.pNext; s; s = s->pNext)
                if (s->sType == VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO) {
                    const VkShaderModuleCreateInfo *mi = (const void *)s;
                    raw = fnv(FNV_OFFSET, mi->pCode, mi->codeSize);
                    norm = normalised_hash(mi->pCode, mi->codeSize / 4);
                }
        }
        put(pipelines, (uint64_t)(uintptr_t)out[i], raw, norm);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL set_name(VkDevice dev, const VkDebugUtilsObjectNameInfoEXT *info) {
    struct device *d = device_of(dev);
    if (info->objectType == VK_OBJECT_TYPE_PIPELINE && info->pObjectName) {
        pthread_mutex_lock(&lock);
        struct entry *p = find(pipelines, info->objectHandle);
        if (p) {
            strncpy(p->name, info->pObjectName, NAME_CAP - 1);
            p->name[NAME_CAP - 1] = 0;
        }
        pthread_mutex_unlock(&lock);
    }
    return d->set_name ? d->set_name(dev, info) : VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL bind(VkCommandBuffer cb, VkPipelineBindPoint point, VkPipeline p) {
    struct device *d = device_of(cb);
    if (point == VK_PIPELINE_BIND_POINT_COMPUTE) {
        pthread_mutex_lock(&lock);
        struct entry *e = find(pipelines, (uint64_t)(uintptr_t)p);
        if (e) add_bound(e);
        pthread_mutex_unlock(&lock);
    }
    d->bind(cb, point, p);
}

/* ---- fence polls ---------------------------------------------------------------------------- */

/* Long enough for the poll loop to stop costing a core, short enough that a caller polling a
 * fence nobody will signal is not held up noticeably. A signal ends the wait at once. */
#define FENCE_NAP_NS 2000000ull

static VKAPI_ATTR VkResult VKAPI_CALL fence_status(VkDevice dev, VkFence fence) {
    struct device *d = device_of(dev);
    VkResult r = d->fence_status(dev, fence);
    if (r != VK_NOT_READY || !d->cpu || !d->wait_fences) return r;
    VkResult w = d->wait_fences(dev, 1, &fence, VK_TRUE, FENCE_NAP_NS);
    if (w != VK_SUCCESS && w != VK_TIMEOUT) return w;
    return d->fence_status(dev, fence);
}

/* ---- creation, destruction, dispatch ----------------------------------------------------- */

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_instance_proc(VkInstance, const char *);
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_device_proc(VkDevice, const char *);

static VKAPI_ATTR VkResult VKAPI_CALL create_instance(const VkInstanceCreateInfo *ci,
                                                      const VkAllocationCallbacks *a, VkInstance *out) {
    VkLayerInstanceCreateInfo *link = (VkLayerInstanceCreateInfo *)ci->pNext;
    while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
                     link->function == VK_LAYER_LINK_INFO))
        link = (VkLayerInstanceCreateInfo *)link->pNext;
    if (!link) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    link->u.pLayerInfo = link->u.pLayerInfo->pNext;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
    if (!create) return VK_ERROR_INITIALIZATION_FAILED;
    VkResult r = create(ci, a, out);
    if (r != VK_SUCCESS) return r;
    struct instance *i = calloc(1, sizeof *i);
    if (!i) return VK_ERROR_OUT_OF_HOST_MEMORY;
    i->key = key_of(*out);
    i->handle = *out;
    i->gipa = gipa;
#define GET(field, type, name) i->field = (type)gipa(*out, name)
    GET(destroy, PFN_vkDestroyInstance, "vkDestroyInstance");
    GET(props2, PFN_vkGetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2");
    GET(props2_khr, PFN_vkGetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2KHR");
    GET(features2, PFN_vkGetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2");
    if (!i->features2) GET(features2, PFN_vkGetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2KHR");
    GET(props, PFN_vkGetPhysicalDeviceProperties, "vkGetPhysicalDeviceProperties");
    GET(extensions, PFN_vkEnumerateDeviceExtensionProperties, "vkEnumerateDeviceExtensionProperties");
#undef GET
    pthread_mutex_lock(&lock);
    i->next = instances;
    instances = i;
    pthread_mutex_unlock(&lock);
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL destroy_instance(VkInstance inst, const VkAllocationCallbacks *a) {
    void *key = key_of(inst);
    pthread_mutex_lock(&lock);
    struct instance **p = &instances, *found = NULL;
    while (*p && (*p)->key != key) p = &(*p)->next;
    if (*p) {
        found = *p;
        *p = found->next;
    }
    pthread_mutex_unlock(&lock);
    if (found) {
        found->destroy(inst, a);
        free(found);
    }
}

static VKAPI_ATTR VkResult VKAPI_CALL create_device(VkPhysicalDevice pd, const VkDeviceCreateInfo *ci,
                                                    const VkAllocationCallbacks *a, VkDevice *out) {
    VkLayerDeviceCreateInfo *link = (VkLayerDeviceCreateInfo *)ci->pNext;
    while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                     link->function == VK_LAYER_LINK_INFO))
        link = (VkLayerDeviceCreateInfo *)link->pNext;
    if (!link) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    link->u.pLayerInfo = link->u.pLayerInfo->pNext;
    struct instance *inst = instance_of(pd);
    PFN_vkCreateDevice create =
        (PFN_vkCreateDevice)gipa(inst ? inst->handle : VK_NULL_HANDLE, "vkCreateDevice");
    if (!create) return VK_ERROR_INITIALIZATION_FAILED;
    VkResult r = create(pd, ci, a, out);
    if (r != VK_SUCCESS) return r;
    struct device *d = calloc(1, sizeof *d);
    if (!d) return VK_ERROR_OUT_OF_HOST_MEMORY;
    d->key = key_of(*out);
    d->handle = *out;
    d->gdpa = gdpa;
#define GET(field, type, name) d->field = (type)gdpa(*out, name)
    GET(destroy, PFN_vkDestroyDevice, "vkDestroyDevice");
    GET(create_module, PFN_vkCreateShaderModule, "vkCreateShaderModule");
    GET(create_compute, PFN_vkCreateComputePipelines, "vkCreateComputePipelines");
    GET(bind, PFN_vkCmdBindPipeline, "vkCmdBindPipeline");
    GET(set_name, PFN_vkSetDebugUtilsObjectNameEXT, "vkSetDebugUtilsObjectNameEXT");
    GET(fence_status, PFN_vkGetFenceStatus, "vkGetFenceStatus");
    GET(wait_fences, PFN_vkWaitForFences, "vkWaitForFences");
#undef GET
    if (inst && inst->props) {
        VkPhysicalDeviceProperties p;
        inst->props(pd, &p);
        d->cpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    }
    pthread_mutex_lock(&lock);
    d->next = devices;
    devices = d;
    pthread_mutex_unlock(&lock);
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL destroy_device(VkDevice dev, const VkAllocationCallbacks *a) {
    void *key = key_of(dev);
    pthread_mutex_lock(&lock);
    struct device **p = &devices, *found = NULL;
    while (*p && (*p)->key != key) p = &(*p)->next;
    if (*p) {
        found = *p;
        *p = found->next;
    }
    pthread_mutex_unlock(&lock);
    if (found) {
        found->destroy(dev, a);
        free(found);
    }
}

/* Device-level functions this layer wraps (NULL: not wrapped). */
static PFN_vkVoidFunction device_function(const char *name) {
#define IS(n, f) if (strcmp(name, n) == 0) return (PFN_vkVoidFunction)f
    IS("vkGetDeviceProcAddr", get_device_proc);
    IS("vkDestroyDevice", destroy_device);
    IS("vkCreateShaderModule", create_module);
    IS("vkCreateComputePipelines", create_compute);
    IS("vkCmdBindPipeline", bind);
    IS("vkGetFenceStatus", fence_status);
#undef IS
    return NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_device_proc(VkDevice dev, const char *name) {
    struct device *d = device_of(dev);
    if (!d) return NULL;
    PFN_vkVoidFunction f = device_function(name);
    if (f) return f;
    if (strcmp(name, "vkSetDebugUtilsObjectNameEXT") == 0)
        return d->set_name ? (PFN_vkVoidFunction)set_name : NULL;
    return d->gdpa(dev, name);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_instance_proc(VkInstance instance, const char *name) {
#define IS(n, f) if (strcmp(name, n) == 0) return (PFN_vkVoidFunction)f
    IS("vkGetInstanceProcAddr", get_instance_proc);
    IS("vkCreateInstance", create_instance);
    if (instance == VK_NULL_HANDLE) return NULL;
    IS("vkDestroyInstance", destroy_instance);
    IS("vkCreateDevice", create_device);
#undef IS
    struct instance *i = instance_of(instance);
    if (!i) return NULL;
    if (strcmp(name, "vkGetPhysicalDeviceProperties2") == 0)
        return i->props2 ? (PFN_vkVoidFunction)props2 : NULL;
    if (strcmp(name, "vkGetPhysicalDeviceProperties2KHR") == 0)
        return i->props2_khr || i->props2 ? (PFN_vkVoidFunction)props2_khr : NULL;
    PFN_vkVoidFunction f = device_function(name);
    if (f) return f;
    return i->gipa(instance, name);
}

EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v) {
    if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT) return VK_ERROR_INITIALIZATION_FAILED;
    if (v->loaderLayerInterfaceVersion > 2) v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr = get_instance_proc;
    v->pfnGetDeviceProcAddr = get_device_proc;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
