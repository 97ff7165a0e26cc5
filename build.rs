//! The engine's build script: the CUDA link arguments for its test binaries
//! (`crates/build-support`); rudder-llama's records the Vulkan shader families.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    rudder_build::cuda_link::emit();
}
