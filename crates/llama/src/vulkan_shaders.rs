//! Whether this Vulkan build of llama.cpp has ggml-vulkan's fast shaders.
//!
//! ggml-vulkan compiles its cooperative-matrix (matrix-core) and integer-dot shaders only when
//! the `glslc` it was built with knows the GLSL extensions; Debian 12's glslc (shaderc 2023.2)
//! knows none of them, and the build then runs prompts ~4× slower on an NVIDIA GPU ("matrix
//! cores: none"). `build.rs` repeats ggml's test with the same glslc and records the answer;
//! `rudder status` prints [`build_note`] when the binary lacks them.

/// The shader families `build.rs` found glslc supports (`coopmat`, `coopmat2`, `integer_dot`,
/// comma-separated); `None` when this is not a Vulkan build.
pub const BUILD_SHADERS: Option<&str> = option_env!("RUDDER_VULKAN_SHADERS");
/// The `--version` line of the glslc this build used, e.g. `shaderc 2023.2-1`.
pub const BUILD_GLSLC: Option<&str> = option_env!("RUDDER_VULKAN_GLSLC");

/// What `rudder status` says about this binary's Vulkan shaders, for the GPU it found
/// (`device`: the driver's name for it), or `None` when there is nothing to say.
pub fn build_note(device: Option<&str>) -> Option<String> {
    note(BUILD_SHADERS, BUILD_GLSLC, device)
}

/// [`build_note`] for a given build: `shaders` as in [`BUILD_SHADERS`] (`None`: not a Vulkan
/// build), `glslc` its version line.
pub fn note(shaders: Option<&str>, glslc: Option<&str>, device: Option<&str>) -> Option<String> {
    let shaders = shaders?;
    let has = |name: &str| shaders.split(',').any(|s| s.trim() == name);
    let nvidia = device.is_none_or(|d| d.to_ascii_lowercase().contains("nvidia"));
    let mut missing = Vec::new();
    if !has("coopmat") {
        missing.push("cooperative-matrix");
    }
    // NVIDIA's own matrix-core shaders (VK_NV_cooperative_matrix2): only its GPUs use them.
    if nvidia && !has("coopmat2") {
        missing.push("NV cooperative-matrix-2");
    }
    if !has("integer_dot") {
        missing.push("integer-dot");
    }
    if missing.is_empty() {
        return None;
    }
    let mut text = format!(
        "this Vulkan build lacks the {} shaders (its glslc{} is too old), so llama.cpp leaves \
         the GPU's matrix cores unused and reads prompts slower; scripts/vulkan-glslc.sh \
         target/vulkan-sdk fetches a newer glslc, and scripts/run.sh rebuilds with it",
        join_and(&missing),
        glslc.map(|v| format!(", {v},")).unwrap_or_default()
    );
    if nvidia {
        text.push_str(
            ". On an NVIDIA GPU a CUDA build is the fast path: with nvcc installed, or with \
             driver 580 or newer (scripts/setup.sh --gpu then fetches CUDA from PyPI), \
             scripts/run.sh builds for CUDA, which on an H100 read a 7B Q4_K_M's \
             prompts at ~10,000 tok/s against ~2,200 for such a Vulkan build, and generated \
             7.6x faster with 16 sequences in parallel than with one (Vulkan: 1.0x)",
        );
    }
    Some(text)
}

/// "a", "a and b", "a, b and c".
fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_vulkan_says_nothing() {
        assert_eq!(note(None, None, Some("NVIDIA H100 80GB HBM3")), None);
    }

    #[test]
    fn a_build_with_every_shader_says_nothing() {
        let all = Some("coopmat,coopmat2,integer_dot");
        assert_eq!(
            note(all, Some("shaderc 2025.2-1"), Some("NVIDIA H100")),
            None
        );
        assert_eq!(note(all, None, None), None);
    }

    #[test]
    fn debian_12_glslc_on_nvidia_names_the_shaders_and_what_cuda_gives() {
        let n = note(
            Some(""),
            Some("shaderc 2023.2-1"),
            Some("NVIDIA H100 80GB HBM3"),
        )
        .unwrap();
        assert!(
            n.contains(
                "lacks the cooperative-matrix, NV cooperative-matrix-2 and integer-dot shaders"
            ),
            "{n}"
        );
        assert!(n.contains("its glslc, shaderc 2023.2-1, is too old"), "{n}");
        assert!(n.contains("scripts/vulkan-glslc.sh"), "{n}");
        assert!(n.contains("CUDA") && n.contains("~10,000 tok/s"), "{n}");
    }

    #[test]
    fn other_gpus_are_not_sent_to_cuda_nor_told_about_nvidia_shaders() {
        let n = note(Some(""), None, Some("AMD Radeon 780M (RADV GFX1103_R1)")).unwrap();
        assert!(
            n.contains("lacks the cooperative-matrix and integer-dot shaders"),
            "{n}"
        );
        assert!(n.contains("(its glslc is too old)"), "{n}");
        assert!(!n.contains("CUDA"), "{n}");
        // KHR cooperative matrices and integer dot are all an AMD or Intel GPU uses.
        assert_eq!(
            note(
                Some("coopmat,integer_dot"),
                None,
                Some("Intel(R) Arc(tm) A770")
            ),
            None
        );
    }

    #[test]
    fn a_glslc_with_khr_but_not_nv_matrices_matters_only_on_nvidia() {
        let partial = Some("coopmat,integer_dot");
        let n = note(partial, None, Some("NVIDIA GeForce RTX 4090")).unwrap();
        assert!(
            n.contains("lacks the NV cooperative-matrix-2 shaders"),
            "{n}"
        );
        // No device found yet: the advice assumes it may be an NVIDIA one.
        assert!(note(partial, None, None).is_some());
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(join_and(&["a"]), "a");
        assert_eq!(join_and(&["a", "b"]), "a and b");
        assert_eq!(join_and(&["a", "b", "c"]), "a, b and c");
    }
}
