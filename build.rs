//! The crate's build script; each concern is a module under build/.

#[path = "build/cuda_link.rs"]
mod cuda_link;
#[path = "build/vulkan_shaders.rs"]
mod vulkan_shaders;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    cuda_link::emit();
    vulkan_shaders::emit();
}
