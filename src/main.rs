//! The `spillway` command: parses arguments and maps failures to exit codes
//! (2 for bad input such as an invalid workload, 1 for anything else).

use std::process::ExitCode;

/// Batches are made on source threads and freed on the engine thread: mimalloc frees
/// across threads without the arena lock glibc's malloc takes for each such free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    spillway::cli::main()
}
