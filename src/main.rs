//! The `spillway` command: parses arguments and maps failures to exit codes
//! (2 for bad input such as an invalid workload, 1 for anything else).

use std::process::ExitCode;

/// Batches are made on source threads and freed on the engine thread: mimalloc frees
/// across threads without the arena lock glibc's malloc takes for each such free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (the same in its v2 and v3).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed memory stays with the process before mimalloc returns it to the OS,
/// ms. mimalloc's default, 10 ms, is shorter than the time between a queue's batches
/// being freed and new ones being made under load: each came back as fresh pages the
/// kernel zeroed (2 MiB at a time with transparent huge pages), a third of the engine
/// thread's time with 1000 standing queries. A second keeps that churn off the hot path
/// and still gives memory back soon after a burst. `MIMALLOC_PURGE_DELAY` overrides it.
const PURGE_DELAY_MS: std::ffi::c_long = 1000;

fn main() -> ExitCode {
    // SAFETY: sets an option before any other thread runs; the option exists in every
    // mimalloc this build links (see `PURGE_DELAY`).
    unsafe { libmimalloc_sys::mi_option_set_default(PURGE_DELAY, PURGE_DELAY_MS) };
    spillway::cli::main()
}
