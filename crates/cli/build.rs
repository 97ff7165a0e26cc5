//! The `rudder` binary's build script: the same CUDA link arguments as the engine's
//! (`crates/build-support`).

fn main() {
    rudder_build::cuda_link::emit();
}
