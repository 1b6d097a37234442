//! The `spillway` command: parses arguments and maps failures to exit codes
//! (2 for bad input such as an invalid workload, 1 for anything else).

use std::process::ExitCode;

/// Batches are made on source threads and freed on the engine thread: mimalloc frees
/// across threads without the arena lock glibc's malloc takes for each such free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its v3 header; libmimalloc-sys names no constant).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed memory stays with the process before it goes back to the OS: a backlog
/// that drains and builds again (queues of many standing queries, a surge) reuses its pages
/// instead of faulting in freshly zeroed ones. `MIMALLOC_PURGE_DELAY` still overrides it.
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

fn main() -> ExitCode {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: stores an option value; no other thread is running yet.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    spillway::cli::main()
}
