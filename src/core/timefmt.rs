//! RFC 3339 text of a timestamp (nanoseconds since the Unix epoch, UTC), for every `i64`
//! including times before 1970: `1969-12-31T23:59:59.999Z`. Invariant: the text is the
//! instant truncated towards the past to the millisecond, so ordering is preserved.

use std::fmt;

/// A timestamp that displays as RFC 3339 UTC with milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Rfc3339Millis(pub i64);

impl fmt::Display for Rfc3339Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.0.div_euclid(1_000_000);
        let (secs, ms) = (millis.div_euclid(1000), millis.rem_euclid(1000));
        let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        )
    }
}

/// Appends the RFC 3339 text of `ns` (as `Rfc3339Millis` displays it) to `out`, without
/// `fmt`: the sinks write one per timestamp of every result row.
pub fn push_rfc3339_millis(out: &mut Vec<u8>, ns: i64) {
    let millis = ns.div_euclid(1_000_000);
    let (secs, ms) = (millis.div_euclid(1000), millis.rem_euclid(1000));
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    // Years of an i64 of nanoseconds lie in 1677..=2262: always four digits.
    let digits = |v: i64, n: usize, out: &mut Vec<u8>| {
        for k in (0..n).rev() {
            out.push(b'0' + (v / 10i64.pow(k as u32) % 10) as u8);
        }
    };
    digits(y, 4, out);
    out.push(b'-');
    digits(m, 2, out);
    out.push(b'-');
    digits(d, 2, out);
    out.push(b'T');
    digits(sod / 3600, 2, out);
    out.push(b':');
    digits(sod / 60 % 60, 2, out);
    out.push(b':');
    digits(sod % 60, 2, out);
    out.push(b'.');
    digits(ms, 3, out);
    out.push(b'Z');
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(ns: i64) -> String {
        Rfc3339Millis(ns).to_string()
    }

    #[test]
    fn the_byte_writer_agrees_with_the_display() {
        for ns in [
            0,
            -1,
            1,
            999_999_999,
            -86_400_000_000_000,
            951_782_400_123_456_789,
            1_765_000_000_123_456_789,
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = Vec::new();
            push_rfc3339_millis(&mut out, ns);
            assert_eq!(String::from_utf8(out).unwrap(), text(ns), "{ns}");
        }
    }

    #[test]
    fn times_before_the_epoch_print_as_such() {
        assert_eq!(text(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(text(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(text(-86_400_000_000_000), "1969-12-31T00:00:00.000Z");
        assert_eq!(text(i64::MIN), "1677-09-21T00:12:43.145Z");
        assert_eq!(text(i64::MAX), "2262-04-11T23:47:16.854Z");
    }

    #[test]
    #[cfg(feature = "shell")]
    fn times_after_the_epoch_match_humantime() {
        use std::time::{Duration, UNIX_EPOCH};
        for ns in [
            1,
            999_999_999,
            951_782_400_123_456_789,
            1_700_000_000_000_000_000,
        ] {
            let t = UNIX_EPOCH + Duration::from_nanos(ns as u64);
            assert_eq!(text(ns), humantime::format_rfc3339_millis(t).to_string());
        }
    }
}
