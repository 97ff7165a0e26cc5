//! The crate's build script; each concern is a module under build/.

#[path = "build/vulkan_shaders.rs"]
mod vulkan_shaders;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    vulkan_shaders::emit();
}
