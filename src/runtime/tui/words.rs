//! Figures and drop settings as the dashboard writes them: rates, durations, and a
//! semantic drop as a predicate in words (`temp < 31.5 dropped`). Pure functions.

use super::msg::DropDesc;
use crate::core::schema::Nanos;
use crate::qos::Binning;

/// `812`, `50.0k`, `1.20M`.
pub fn rate(per_sec: f64) -> String {
    crate::runtime::status::rate(per_sec)
}

/// A latency in ms with a precision that fits its size; `-` for none.
pub fn ms(n: Nanos) -> String {
    if n <= 0 {
        return "-".into();
    }
    let m = n as f64 / 1e6;
    if m >= 100.0 {
        format!("{m:.0}")
    } else if m >= 10.0 {
        format!("{m:.1}")
    } else {
        format!("{m:.2}")
    }
}

fn num(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    if r == r.trunc() {
        format!("{r:.0}")
    } else if (r * 10.0) == (r * 10.0).trunc() {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    }
}

/// A range of `column` as a predicate: `x < 3`, `x >= 5`, `3 <= x < 5`.
fn range(column: &str, lo: f64, hi: f64) -> String {
    match (lo.is_finite(), hi.is_finite()) {
        (false, false) => format!("every {column}"),
        (false, true) => format!("{column} < {}", num(hi)),
        (true, false) => format!("{column} >= {}", num(lo)),
        (true, true) => format!("{} <= {column} < {}", num(lo), num(hi)),
    }
}

/// A semantic drop in words: the value ranges dropped whole, then those kept in part,
/// e.g. `temp < 31.5 dropped; 31.5 <= temp < 32 kept 40%`. Adjacent bins with the same
/// setting read as one range; `keeps all` when nothing is dropped.
pub fn semantic_predicate(column: &str, binning: &Binning, keep: &[f64]) -> String {
    let mut dropped = Vec::new();
    let mut partial = Vec::new();
    let mut i = 0;
    while i < keep.len() {
        let k = keep[i];
        if k >= 1.0 {
            i += 1;
            continue;
        }
        // Below one in a million reads as dropped: the planner's floor is not a policy.
        let whole = k < 1e-6;
        let start = i;
        while i + 1 < keep.len()
            && if whole {
                keep[i + 1] < 1e-6
            } else {
                (keep[i + 1] - k).abs() < 1e-9
            }
        {
            i += 1;
        }
        let (lo, hi) = (binning.bounds(start).0, binning.bounds(i).1);
        if whole {
            dropped.push(range(column, lo, hi));
        } else {
            let pct = 100.0 * k;
            let digits = if pct < 1.0 { 2 } else { 0 };
            partial.push(format!("{} kept {pct:.digits$}%", range(column, lo, hi)));
        }
        i += 1;
    }
    let mut parts = Vec::new();
    if !dropped.is_empty() {
        parts.push(format!("{} dropped", dropped.join(", ")));
    }
    parts.extend(partial);
    if parts.is_empty() {
        "keeps all".into()
    } else {
        parts.join("; ")
    }
}

/// A drop point's kind and setting in words; `column` names the semantic field.
pub fn drop_words(d: &DropDesc, columns: &[String]) -> (&'static str, String) {
    match d {
        DropDesc::KeepAll => ("-", "keeps all".into()),
        DropDesc::Random { keep } => ("random", format!("keep {:.0}% at random", 100.0 * keep)),
        DropDesc::Window { keep } => (
            "window",
            format!("keep {:.0}% of (key, window) groups", 100.0 * keep),
        ),
        DropDesc::Semantic {
            column,
            binning,
            keep,
        } => {
            let name = columns
                .get(*column)
                .map_or_else(|| format!("column {column}"), |s| s.clone());
            ("semantic", semantic_predicate(&name, binning, keep))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_drop_reads_as_ranges_dropped_and_kept_in_part() {
        // Bins: under (-inf,20), [20,25), [25,30), [30,35), [35,40), over [40,inf).
        let b = Binning::new(20.0, 40.0, 4);
        let keep = [0.0, 0.0, 0.0, 0.4, 1.0, 1.0];
        assert_eq!(
            semantic_predicate("temp", &b, &keep),
            "temp < 30 dropped; 30 <= temp < 35 kept 40%"
        );
        assert_eq!(semantic_predicate("temp", &b, &[1.0; 6]), "keeps all");
        let keep = [1.0, 1.0, 0.0, 1.0, 1.0, 0.0];
        assert_eq!(
            semantic_predicate("t", &b, &keep),
            "25 <= t < 30, t >= 40 dropped"
        );
    }

    #[test]
    fn figures_read_compactly() {
        assert_eq!(ms(0), "-");
        assert_eq!(ms(1_234_000), "1.23");
        assert_eq!(ms(123_400_000), "123");
        assert_eq!(num(31.5), "31.5");
        assert_eq!(num(31.0), "31");
    }
}
