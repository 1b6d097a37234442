//! The `spillway` command: parses arguments and maps failures to exit codes
//! (2 for bad input such as an invalid workload, 1 for anything else).

use std::process::ExitCode;

fn main() -> ExitCode {
    spillway::cli::main()
}
