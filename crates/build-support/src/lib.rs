//! What the build scripts of the workspace share (a build-dependency of the `rudder` engine,
//! rudder-llama, the `rudder` binary and the desktop app): each concern is a module, and each
//! build script calls the ones it needs from its `main`.

pub mod cuda_link;
pub mod vulkan_shaders;
