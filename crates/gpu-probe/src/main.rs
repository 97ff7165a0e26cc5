//! `rudder-gpu-probe`: prints the llama.cpp backend to build Rudder with and why.
//!
//!   rudder-gpu-probe             what it chose, why, and what a GPU build still lacks
//!   rudder-gpu-probe --feature   only the cargo feature (empty for the CPU); the rest on stderr
//!
//! `RUDDER_GPU=cpu|cuda|metal|vulkan` forces a backend; `auto` or unset detects one.

use std::process::ExitCode;

use rudder_gpu_probe::{choose, probe, Backend};

fn main() -> ExitCode {
    let feature_only = std::env::args().skip(1).any(|a| a == "--feature");
    let forced = match std::env::var("RUDDER_GPU") {
        Ok(v) if v.trim().is_empty() || v.trim().eq_ignore_ascii_case("auto") => None,
        Ok(v) => match Backend::parse(&v) {
            Some(b) => Some(b),
            None => {
                eprintln!("error: RUDDER_GPU={v}: expected auto, cpu, cuda, metal or vulkan");
                return ExitCode::from(2);
            }
        },
        Err(_) => None,
    };
    let choice = choose(&probe(), forced);
    let mut report = format!("gpu backend: {} ({})\n", choice.backend, choice.reason);
    for m in &choice.missing {
        report.push_str(&format!("  missing: {m}\n"));
    }
    if choice.backend != Backend::Cpu && !choice.missing.is_empty() {
        // A forced backend whose build would fail deep inside CMake: say what it needs now.
        eprint!("{report}");
        eprintln!(
            "error: a {} build of llama.cpp needs what is missing above",
            choice.backend
        );
        return ExitCode::FAILURE;
    }
    if feature_only {
        eprint!("{report}");
        println!("{}", choice.backend.feature());
    } else {
        print!("{report}");
    }
    ExitCode::SUCCESS
}
