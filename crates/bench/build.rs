//! The `rudder-bench` binary's build script: the same CUDA link arguments as `rudder`'s
//! (`crates/build-support`), so a `cuda` build against the toolkit from PyPI links.

fn main() {
    rudder_build::cuda_link::emit();
}
