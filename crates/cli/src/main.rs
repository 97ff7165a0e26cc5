//! The `rudder` command line: every engine capability, scriptable.

mod commands;

fn main() -> std::process::ExitCode {
    commands::main()
}
