//! The `rudder` command line: every engine capability, scriptable.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
