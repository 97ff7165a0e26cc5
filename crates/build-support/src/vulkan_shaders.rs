//! For a Vulkan build (`--features vulkan`): which of ggml-vulkan's fast shader families the
//! shader compiler can build, found the way llama.cpp's CMake finds them, so `rudder status` can
//! say when the binary lacks them (`crates/llama/src/vulkan_shaders.rs`).
//!
//! ggml-vulkan's CMakeLists compiles a test shader per GLSL extension with the `glslc` that
//! CMake's FindVulkan picks (`$VULKAN_SDK/bin` first, then `PATH`) and builds the matching
//! shaders only when glslc does not answer "extension not supported". This repeats that test
//! with the same glslc and hands the result to the crate as `RUDDER_VULKAN_SHADERS` (the
//! supported families, comma-separated) and `RUDDER_VULKAN_GLSLC` (its `--version` line).
//! Without the feature it does nothing.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The extensions ggml-vulkan tests, by the short names `crates/llama/src/vulkan_shaders.rs` reads.
const EXTENSIONS: [(&str, &str); 3] = [
    ("GL_KHR_cooperative_matrix", "coopmat"),
    ("GL_NV_cooperative_matrix2", "coopmat2"),
    ("GL_EXT_integer_dot_product", "integer_dot"),
];

/// Prints the `cargo:` lines (nothing without the `vulkan` feature).
pub fn emit() {
    println!("cargo:rerun-if-env-changed=VULKAN_SDK");
    if env::var_os("CARGO_FEATURE_VULKAN").is_none() {
        return;
    }
    let Some(glslc) = find_glslc() else {
        // llama-cpp-sys-2's CMake fails the build without one.
        return;
    };
    println!("cargo:rerun-if-changed={}", glslc.display());
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut supported = Vec::new();
    for (extension, name) in EXTENSIONS {
        let shader = out.join(format!("{name}.comp"));
        std::fs::write(
            &shader,
            format!("#version 460\n#extension {extension} : require\nvoid main() {{}}\n"),
        )
        .expect("writing a test shader to OUT_DIR");
        let answer = Command::new(&glslc)
            .args([
                "-o",
                "-",
                "-fshader-stage=compute",
                "--target-env=vulkan1.3",
            ])
            .arg(&shader)
            .output();
        if let Ok(answer) = answer {
            if !String::from_utf8_lossy(&answer.stderr).contains("extension not supported") {
                supported.push(name);
            }
        }
    }
    let version = Command::new(&glslc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| "glslc".into());
    println!(
        "cargo:rustc-env=RUDDER_VULKAN_SHADERS={}",
        supported.join(",")
    );
    println!("cargo:rustc-env=RUDDER_VULKAN_GLSLC={version}");
}

/// `$VULKAN_SDK/bin/glslc`, else the first `glslc` on `PATH` (FindVulkan's order).
fn find_glslc() -> Option<PathBuf> {
    if let Some(sdk) = env::var_os("VULKAN_SDK") {
        let glslc = Path::new(&sdk).join("bin").join("glslc");
        if glslc.is_file() {
            return Some(glslc);
        }
    }
    println!("cargo:rerun-if-env-changed=PATH");
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join("glslc"))
        .find(|glslc| glslc.is_file())
}
