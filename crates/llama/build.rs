//! rudder-llama's build script: the CUDA link arguments for its test binaries, and which Vulkan
//! shader families a Vulkan build has (`crates/build-support`).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    rudder_build::cuda_link::emit();
    rudder_build::vulkan_shaders::emit();
}
