//! What a validation-layer message means for a row: a finding, or only that the layer is older
//! than something the variant uses ("unvalidated: layer predates X"), or a message about the
//! environment rather than our calls.
//!
//! A layer older than an extension or SPIR-V capability cannot validate what uses it: it says
//! so in a few fixed ways (an unknown extension string, an unknown sType in a pNext chain, an
//! invalid capability operand from its SPIR-V validator). Such a message is neither a pass nor
//! a failure: the row is unvalidated, with the reason and the layer's version. Every other
//! message is a finding.

/// The meaning of one layer message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerMessage {
    /// A real finding: fails the case.
    Finding,
    /// The layer predates what is named (an extension, a structure type or a SPIR-V
    /// capability): whatever uses it is unvalidated, never passed or failed on it.
    Predates(String),
    /// The Vulkan loader, not our code, looks up an instance-level function with
    /// vkGetDeviceProcAddr while it builds the device dispatch table in vkCreateDevice (older
    /// loaders do this for some physical-device functions of device extensions, e.g.
    /// vkGetPhysicalDeviceVideoEncodeQualityLevelPropertiesKHR). vkdiff never calls
    /// vkGetDeviceProcAddr (ash loads instance-level functions through vkGetInstanceProcAddr),
    /// so this says nothing about the kernels: reported once, never a failure.
    LoaderLookup(String),
}

/// The feature/property structure types of the extensions vkdiff may enable, by sType (as
/// the layer prints them) and name.
const KNOWN_STYPES: [(&str, &str); 5] = [
    (
        "(1000506000)",
        "VkPhysicalDeviceCooperativeMatrixFeaturesKHR",
    ),
    (
        "(1000593000)",
        "VkPhysicalDeviceCooperativeMatrix2FeaturesNV",
    ),
    (
        "(1000593002)",
        "VkPhysicalDeviceCooperativeMatrix2PropertiesNV",
    ),
    ("(1000141000)", "VkPhysicalDeviceShaderBfloat16FeaturesKHR"),
    (
        "(1000593001)",
        "VkCooperativeMatrixFlexibleDimensionsPropertiesNV",
    ),
];

/// The extensions vkdiff may enable that a layer may not know. Not among them:
/// VK_KHR_pipeline_executable_properties (enabled wherever the device has it), of Vulkan
/// 1.1.109, which every layer that knows the Vulkan 1.2 our kernels need knows too.
const KNOWN_EXTENSIONS: [&str; 5] = [
    "VK_KHR_cooperative_matrix",
    "VK_NV_cooperative_matrix2",
    "VK_KHR_shader_bfloat16",
    "VK_KHR_shader_integer_dot_product",
    "VK_EXT_pipeline_robustness",
];

/// The SPIR-V extensions of the variants vkdiff compiles that a layer may not know.
const KNOWN_SPIRV_EXTENSIONS: [&str; 3] = [
    "SPV_KHR_bfloat16",
    "SPV_KHR_cooperative_matrix",
    "SPV_NV_cooperative_matrix2",
];

/// The word after `key` in `text` (up to whitespace or punctuation).
fn word_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    let rest = rest.trim_start_matches([' ', ':', '"', '\'']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// Classifies one message text.
pub fn classify(text: &str) -> LayerMessage {
    // An extension the layer does not know: "... VK_X is not supported by this layer",
    // "... VK_X ... is not a known extension string" (only for the extensions we enable).
    if text.contains("is not supported by this layer") || text.contains("not a known extension") {
        if let Some(e) = KNOWN_EXTENSIONS.iter().find(|e| {
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == **e)
        }) {
            return LayerMessage::Predates(e.to_string());
        }
    }
    // A structure type the layer does not know, in a pNext chain we build.
    if text.contains("pNext-pNext") && text.contains("unknown VkStructureType") {
        if let Some((_, name)) = KNOWN_STYPES.iter().find(|(s, _)| text.contains(s)) {
            return LayerMessage::Predates(name.to_string());
        }
    }
    // The layer's SPIR-V validator does not know a capability the shader declares.
    if text.contains("Invalid capability operand") {
        let cap = word_after(text, "Invalid capability operand").unwrap_or("?");
        return LayerMessage::Predates(format!("SPIR-V capability {cap}"));
    }
    // A SPIR-V capability or extension the layer cannot name ("Capability (Unhandled
    // OpCapability) declared", "SPIR-V Extension SPV_KHR_bfloat16 was declared, but that is not
    // supported by Vulkan": the 1.4.309 layer on bf16 modules).
    if text.contains("Unhandled OpCapability") {
        return LayerMessage::Predates(UNNAMED_CAPABILITY.to_string());
    }
    if text.contains("was declared, but that is not supported by Vulkan") {
        if let Some(e) = KNOWN_SPIRV_EXTENSIONS.iter().find(|e| text.contains(**e)) {
            return LayerMessage::Predates(format!("SPIR-V extension {e}"));
        }
    }
    // The layer could not specialize the module (its spirv-opt rejects what it does not know,
    // e.g. the bf16 capabilities): every later check of that pipeline sees a wrong module.
    if text.contains("attempted to apply specialization constants with spirv-opt but failed") {
        return LayerMessage::Predates(UNREADABLE_MODULE.to_string());
    }
    // The loader's device dispatch setup (see LoaderLookup).
    // The VUID (WARNING-vkGetDeviceProcAddr-device) is not always part of the message text:
    // the 1.4.309 layer on the H100 says only "vkGetDeviceProcAddr(): pName is trying to grab
    // … which is an instance level function".
    if text.contains("vkGetDeviceProcAddr") && text.contains("instance level function") {
        if let Some(f) = word_after(text, "trying to grab") {
            if f.starts_with("vkGetPhysicalDevice") || f.starts_with("vkEnumeratePhysicalDevice") {
                return LayerMessage::LoaderLookup(f.to_string());
            }
        }
    }
    LayerMessage::Finding
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_lookup_is_recognised_without_its_vuid() {
        // Verbatim from the H100 run (layer 1.4.309), where it failed device creation.
        let m = "vkGetDeviceProcAddr(): pName is trying to grab \
                 vkGetPhysicalDeviceVideoEncodeQualityLevelPropertiesKHR which is an instance level function";
        assert_eq!(
            classify(m),
            LayerMessage::LoaderLookup(
                "vkGetPhysicalDeviceVideoEncodeQualityLevelPropertiesKHR".into()
            )
        );
    }

    #[test]
    fn layer_age_messages_name_what_the_layer_predates() {
        // As the 1.3.239 layer printed it on the H100 (shortened).
        let probe = "Validation Error: [ VUID-VkPhysicalDeviceProperties2-pNext-pNext ] Object 0: \
                     VK_NULL_HANDLE | vkGetPhysicalDeviceProperties2: pProperties->pNext chain \
                     includes a structure with unknown VkStructureType (1000593002); Allowed \
                     structures are [...]";
        assert_eq!(
            classify(probe),
            LayerMessage::Predates("VkPhysicalDeviceCooperativeMatrix2PropertiesNV".into())
        );
        // The same complaint about a struct we do not add is a finding.
        assert_eq!(
            classify(&probe.replace("(1000593002)", "(1000001000)")),
            LayerMessage::Finding
        );
        assert_eq!(
            classify("Device Extension VK_KHR_shader_bfloat16 is not supported by this layer"),
            LayerMessage::Predates("VK_KHR_shader_bfloat16".into())
        );
        // Debian 13's wording (shortened).
        assert_eq!(
            classify(
                "Validation Warning: [ WARNING-CreateDevice-extension-not-found ] vkCreateDevice(): \
                 pCreateInfo->ppEnabledExtensionNames[2] \"VK_KHR_shader_bfloat16\" is not a known \
                 extension string"
            ),
            LayerMessage::Predates("VK_KHR_shader_bfloat16".into())
        );
        // An unknown extension we do not enable is not excused.
        assert_eq!(
            classify("VK_FOO_bar is not a known extension string"),
            LayerMessage::Finding
        );
        assert_eq!(
            classify(
                "Validation Error: [ VUID-VkShaderModuleCreateInfo-pCode-08737 ] vkCreateShaderModule(): \
                 pCreateInfo->pCode (spirv-val produced an error): Invalid capability operand: 5116"
            ),
            LayerMessage::Predates("SPIR-V capability 5116".into())
        );
    }

    #[test]
    fn loader_lookups_of_instance_functions_are_told_apart() {
        let m = "Validation Warning: [ WARNING-vkGetDeviceProcAddr-device ] | MessageID = 0x22b1fbac \
                 | vkGetDeviceProcAddr(): pName is trying to grab \
                 vkGetPhysicalDeviceVideoEncodeQualityLevelPropertiesKHR which is an instance level \
                 function";
        assert_eq!(
            classify(m),
            LayerMessage::LoaderLookup(
                "vkGetPhysicalDeviceVideoEncodeQualityLevelPropertiesKHR".into()
            )
        );
        assert_eq!(
            classify(&m.replace(
                "vkGetPhysicalDeviceVideoEncodeQualityLevelPropertiesKHR",
                "vkCmdDispatch"
            )),
            LayerMessage::Finding
        );
    }

    #[test]
    fn ordinary_findings_stay_findings() {
        assert_eq!(
            classify("Validation Error: [ VUID-vkCmdDispatch-None-02699 ] descriptor not updated"),
            LayerMessage::Finding
        );
        assert_eq!(
            classify("SYNC-HAZARD-READ-AFTER-WRITE: vkCmdDispatch reads buffer written by ..."),
            LayerMessage::Finding
        );
    }
}

/// How a [`LayerMessage::Predates`] message is recorded: this prefix, the name, the layer's
/// version. A case whose only messages are such lines is unvalidated, not failed.
pub const UNVALIDATED: &str = "unvalidated: layer predates ";

/// The recorded line for a message the layer's age explains.
pub fn unvalidated_line(what: &str, layer_version: &str) -> String {
    format!("{UNVALIDATED}{what} (layer version {layer_version})")
}

/// What [`classify`] names when the layer's spirv-opt cannot specialize a module.
const UNREADABLE_MODULE: &str = "a SPIR-V module its spirv-opt cannot specialize";

/// What [`classify`] names for a capability the layer prints as "Unhandled OpCapability".
const UNNAMED_CAPABILITY: &str = "a SPIR-V capability it cannot name";

/// A case's messages with the consequences of an unreadable module explained: once the layer
/// says it does not know a SPIR-V capability the module declares, or cannot specialize it, its
/// other pipeline-creation checks ran on a module it misread (on the H100's 1.4.309 layer, a
/// bf16 matmul drew "workgroup size X (1) is not a multiple of subgroupSize" and coopmat
/// shape mismatches listing "Unhandled VkComponentTypeKHR"). Those become unvalidated lines
/// too (and the module's own vkCreateShaderModule messages); messages about other calls stay
/// findings.
pub fn explain_consequences(messages: Vec<String>) -> Vec<String> {
    let Some(cause) = messages.iter().find_map(|m| {
        let what = m.strip_prefix(UNVALIDATED)?;
        [
            "SPIR-V capability",
            "SPIR-V extension",
            UNREADABLE_MODULE,
            UNNAMED_CAPABILITY,
        ]
        .iter()
        .any(|c| what.starts_with(c))
        .then(|| what.to_string())
    }) else {
        return messages;
    };
    messages
        .into_iter()
        .map(|m| {
            let module_call =
                m.contains("vkCreateComputePipelines") || m.contains("vkCreateShaderModule");
            if !m.starts_with(UNVALIDATED) && module_call {
                format!("{UNVALIDATED}{cause}, so it misread this module's pipeline creation")
            } else {
                m
            }
        })
        .collect()
}

/// True when there are messages and every one is an [`unvalidated_line`].
pub fn only_unvalidated(messages: &[String]) -> bool {
    !messages.is_empty() && messages.iter().all(|m| m.starts_with(UNVALIDATED))
}

#[cfg(test)]
mod record_tests {
    use super::*;

    #[test]
    fn unvalidated_lines_are_recognised_only_alone() {
        let u = unvalidated_line("VK_KHR_shader_bfloat16", "1.3.239");
        assert_eq!(
            u,
            "unvalidated: layer predates VK_KHR_shader_bfloat16 (layer version 1.3.239)"
        );
        assert!(only_unvalidated(std::slice::from_ref(&u)));
        assert!(!only_unvalidated(&[u, "Validation Error: x".into()]));
        assert!(!only_unvalidated(&[]));
    }

    #[test]
    fn a_misread_module_voids_only_its_pipeline_creation_checks() {
        let cause = unvalidated_line("SPIR-V capability 5116", "1.4.309");
        let create = "Error: vkCreateComputePipelines(): pCreateInfos[0].stage.flags \
                      (VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT), but local \
                      workgroup size X dimension (1) is not a multiple of subgroupSize (32)."
            .to_string();
        let dispatch = "Error: vkCmdDispatch(): groupCountX (70000) exceeds the limit".to_string();
        let out = explain_consequences(vec![cause.clone(), create.clone(), dispatch.clone()]);
        assert!(out[1].starts_with(UNVALIDATED) && out[1].contains("5116"));
        assert_eq!(out[2], dispatch);
        assert!(!only_unvalidated(&out));
        // Without a cause nothing changes, and the spirv-opt failure is itself a cause.
        assert_eq!(
            explain_consequences(vec![create.clone()]),
            vec![create.clone()]
        );
        let opt = classify(
            "vkCreateComputePipelines(): pCreateInfos[0].stage VkShaderModule 0x1 shader \
             attempted to apply specialization constants with spirv-opt but failed.",
        );
        let LayerMessage::Predates(what) = opt else {
            panic!("{opt:?}")
        };
        let out = explain_consequences(vec![unvalidated_line(&what, "1.4.309"), create]);
        assert!(only_unvalidated(&out));
        // The shader-module messages of the H100's layer on a bf16 module.
        for (text, what) in [
            (
                "vkCreateShaderModule(): SPIR-V has Capability (Unhandled OpCapability) \
                 declared, but this is not supported by Vulkan.",
                UNNAMED_CAPABILITY.to_string(),
            ),
            (
                "vkCreateShaderModule(): SPIR-V Extension SPV_KHR_bfloat16 was declared, but \
                 that is not supported by Vulkan.",
                "SPIR-V extension SPV_KHR_bfloat16".to_string(),
            ),
        ] {
            assert_eq!(classify(text), LayerMessage::Predates(what));
        }
        assert_eq!(
            classify("vkCreateShaderModule(): SPIR-V Extension SPV_EXT_x was declared, but that is not supported by Vulkan."),
            LayerMessage::Finding
        );
    }
}
