//! Validating a stream's `retain:` (recent history kept for ad-hoc queries): at least one
//! bound, positive, and within what memory allows. Errors are located at the key.

use super::config::RetainConfig;
use super::error::{Diagnostics, join};
use crate::core::retain::RetainLimit;

/// Rows kept at most when only `last` bounds the history.
pub const DEFAULT_RETAIN_TUPLES: u64 = 1_000_000;
/// The largest `tuples` a stream may retain (about 10^7 rows, a few hundred MB).
pub const MAX_RETAIN_TUPLES: u64 = 10_000_000;

/// The limit of stream `stream`'s `retain:`, if given and valid.
pub(crate) fn build_retain(
    diag: &mut Diagnostics,
    stream: &str,
    config: Option<&RetainConfig>,
) -> Option<RetainLimit> {
    let c = config?;
    let path = join(&join("streams", stream), "retain");
    let before = diag.count();
    if c.last.is_none() && c.tuples.is_none() {
        diag.at(
            &path,
            "retain needs `last` (e.g. `{last: 5s}`) or `tuples` (e.g. `{tuples: 100000}`)",
        );
    }
    if let Some(d) = c.last
        && d.0 <= 0
    {
        diag.at(&join(&path, "last"), "last must be positive, e.g. 5s");
    }
    match c.tuples {
        Some(0) => diag.at(&join(&path, "tuples"), "tuples must be at least 1"),
        Some(n) if n > MAX_RETAIN_TUPLES => diag.at(
            &join(&path, "tuples"),
            format!(
                "tuples {n} is more than the {MAX_RETAIN_TUPLES} a stream may retain in memory"
            ),
        ),
        _ => {}
    }
    (diag.count() == before).then(|| RetainLimit {
        last: c.last.map(|d| d.0),
        tuples: c.tuples.unwrap_or(DEFAULT_RETAIN_TUPLES),
    })
}
