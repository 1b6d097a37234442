//! Result rows as JSON lines: the text written for exact and shed rows, and the byte
//! formatting against `fmt` and `ryu`.

use super::*;
use crate::core::batch::Batch;
use crate::core::schema::Scalar;

fn emitted<'a>(
    names: &'a [String],
    types: &'a [DataType],
    b: &'a Batch,
    approx: Option<&'a ResultApprox>,
) -> String {
    let e = Emitted {
        index: 0,
        query: "q",
        names,
        types,
        batch: b,
        approx,
        emitted_at: 3_500_000,
    };
    let mut out = Vec::new();
    write_rows(&mut out, &e).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn latency_prints_in_milliseconds_with_three_decimals_to_the_nearest_microsecond() {
    let text = |ns: i64| {
        let mut out = Vec::new();
        push_millis(&mut out, ns);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(text(2_500_000), "2.500");
    assert_eq!(text(0), "0.000");
    assert_eq!(text(499), "0.000");
    assert_eq!(text(500), "0.001");
    assert_eq!(text(1_234_567), "1.235");
    assert_eq!(text(999_999_999), "1000.000");
    assert_eq!(text(-1_500_000), "-1.500");
    assert_eq!(text(i64::MAX), "9223372036854.776");
    assert_eq!(text(i64::MIN), "-9223372036854.776");
}

#[test]
fn floats_print_short_in_exponent_form_when_extreme_and_null_when_not_finite() {
    let text = |v: f64| {
        let mut out = Vec::new();
        write_float(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert_eq!(text(2.5), "2.5");
    assert_eq!(text(6.0), "6");
    assert_eq!(text(-0.001), "-0.001");
    assert_eq!(text(0.0), "0");
    assert_eq!(text(1.7976931348623157e308), "1.7976931348623157e308");
    assert_eq!(text(1e-320), "1e-320");
    assert_eq!(text(-2.5e16), "-2.5e16");
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(text(v), "null");
    }
    // Every form reads back as the same float.
    for v in [1.7976931348623157e308, 1e-320, 123456789.125, 3e-8] {
        assert_eq!(text(v).parse::<f64>().unwrap(), v);
    }
}

#[test]
fn rows_are_json_lines_with_query_and_latency() {
    let types = [
        DataType::Int,
        DataType::Str,
        DataType::Float,
        DataType::Timestamp,
    ];
    let mut b = Batch::new(&types, 2);
    b.push_row(
        1_000_000,
        &[
            Scalar::Int(7),
            Scalar::Str("a\"b".into()),
            Scalar::Float(2.5),
            Scalar::Timestamp(1_500_000_000),
        ],
    );
    let names: Vec<String> = ["k", "s", "x", "ts"].map(String::from).to_vec();
    let want = "{\"query\":\"q\",\"latency_ms\":2.500,\"k\":7,\"s\":\"a\\\"b\",\"x\":2.5,\
                \"ts\":\"1970-01-01T00:00:01.500Z\"}\n";
    assert_eq!(emitted(&names, &types, &b, None), want);
    // A side-car whose rows are all exact (keep 1) adds nothing.
    let exact = ResultApprox {
        keep: vec![1.0],
        columns: vec![
            ColumnApprox::Exact,
            ColumnApprox::Exact,
            ColumnApprox::Interval {
                lo: vec![f64::NAN],
                hi: vec![f64::NAN],
            },
            ColumnApprox::Exact,
        ],
    };
    assert_eq!(emitted(&names, &types, &b, Some(&exact)), want);
}

/// Strings gathered from batches with different dictionaries (re-coded into one) are
/// written as their text, row by row.
#[test]
fn string_rows_are_written_as_text_whatever_their_dictionary() {
    let types = [DataType::Str, DataType::Int];
    let batch = |rows: &[(&str, i64)]| {
        let mut b = Batch::new(&types, rows.len());
        for &(s, k) in rows {
            b.push_row(1_000_000, &[Scalar::Str(s.into()), Scalar::Int(k)]);
        }
        b
    };
    let first = batch(&[("rome", 1), ("oslo", 2), ("rome", 3)]);
    let second = batch(&[("lima", 4), ("oslo", 5), ("x\"y", 6)]);
    let mut b = Batch::new(&types, 0);
    b.gather_from(&first, &[2, 1]);
    b.gather_from(&second, &[1, 0, 2]);
    b.extend_from(&first);
    let names: Vec<String> = ["city", "k"].map(String::from).to_vec();
    let line = |c: &str, k: i64| {
        format!("{{\"query\":\"q\",\"latency_ms\":2.500,\"city\":{c},\"k\":{k}}}\n")
    };
    let want: String = [
        ("\"rome\"", 3),
        ("\"oslo\"", 2),
        ("\"oslo\"", 5),
        ("\"lima\"", 4),
        ("\"x\\\"y\"", 6),
        ("\"rome\"", 1),
        ("\"oslo\"", 2),
        ("\"rome\"", 3),
    ]
    .iter()
    .map(|&(c, k)| line(c, k))
    .collect();
    assert_eq!(emitted(&names, &types, &b, None), want);
}

#[test]
fn approximate_rows_carry_keep_intervals_and_bounds() {
    let types = [DataType::Str, DataType::Int, DataType::Float, DataType::Int];
    let mut b = Batch::new(&types, 2);
    b.push_row(
        1_000_000,
        &[
            Scalar::Str("a".into()),
            Scalar::Int(8),
            Scalar::Float(25.0),
            Scalar::Int(4),
        ],
    );
    b.push_row(
        1_000_000,
        &[
            Scalar::Str("b".into()),
            Scalar::Int(3),
            Scalar::Float(1.0),
            Scalar::Int(1),
        ],
    );
    let names: Vec<String> = ["k", "n", "total", "hi"].map(String::from).to_vec();
    let approx = ResultApprox {
        keep: vec![0.5, 1.0],
        columns: vec![
            ColumnApprox::Exact,
            ColumnApprox::Interval {
                lo: vec![2.5, f64::NAN],
                hi: vec![13.5, f64::NAN],
            },
            ColumnApprox::Interval {
                lo: vec![f64::NEG_INFINITY, f64::NAN],
                hi: vec![40.25, f64::NAN],
            },
            ColumnApprox::LowerBound,
        ],
    };
    assert_eq!(
        emitted(&names, &types, &b, Some(&approx)),
        "{\"query\":\"q\",\"latency_ms\":2.500,\"k\":\"a\",\"n\":8,\"total\":25,\"hi\":4,\
         \"keep\":0.5,\"n_ci95\":[2.5,13.5],\"total_ci95\":[null,40.25],\
         \"hi_bound\":\"lower\"}\n\
         {\"query\":\"q\",\"latency_ms\":2.500,\"k\":\"b\",\"n\":3,\"total\":1,\"hi\":1}\n"
    );
}

#[test]
fn keep_has_three_significant_digits() {
    let keep = |k: f64| {
        let mut out = Vec::new();
        push_keep(&mut out, k);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(keep(0.5), "0.5");
    assert_eq!(keep(1.0 / 3.0), "0.333");
    assert_eq!(keep(0.001234), "0.00123");
    assert_eq!(keep(0.25), "0.25");
    assert_eq!(keep(0.99999), "1");
    assert_eq!(keep(0.0999999), "0.1");
    assert_eq!(keep(0.0001234), "0.000123");
    assert_eq!(keep(0.0), "0");
}

/// Interval bounds through `ryu` read back as the same float, in plain notation, and
/// as many bytes as `fmt`'s shortest decimal; outside 1e-5..1e16 they are `fmt`'s.
#[test]
fn bounds_read_back_exactly() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut same = 0;
    for i in 0..300_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mantissa = (x >> 11) as f64 / (1u64 << 53) as f64;
        let v = (mantissa + 0.1) * 10f64.powi((i % 26) - 8) * if i % 3 == 0 { -1.0 } else { 1.0 };
        let (mut fast, mut reference) = (Vec::new(), Vec::new());
        push_bound(&mut fast, v);
        write_float(&mut reference, v).unwrap();
        let text = String::from_utf8(fast).unwrap();
        assert_eq!(text.parse::<f64>().unwrap(), v, "{text}");
        assert_eq!(
            text.len(),
            reference.len(),
            "{text} vs {:?}",
            String::from_utf8(reference.clone())
        );
        if !(1e-5..1e16).contains(&v.abs()) {
            assert_eq!(text.as_bytes(), &reference[..]);
        } else {
            assert!(!text.contains('e'), "{text}");
        }
        same += (text.as_bytes() == &reference[..]) as u32;
    }
    assert!(same > 290_000, "{same} of 300000 as fmt writes them");
}

/// The integer path writes what `fmt` with the same decimals writes, trimmed, over a
/// sweep of keeps (ties aside, which a keep fraction's estimate never sits on).
#[test]
fn keep_in_integers_matches_fmt() {
    let mut checked = 0;
    for i in 1..200_000u32 {
        let k = f64::from(i) / 200_000.0 * 0.999_7 + 0.000_3 * f64::from(i % 7) / 7.0;
        let decimals = (2 - k.log10().floor() as i64).clamp(3, 17) as usize;
        let scaled = k * 10f64.powi(decimals as i32);
        if (scaled.fract() - 0.5).abs() < 1e-6 {
            continue;
        }
        let want = format!("{k:.decimals$}");
        let want = want.trim_end_matches('0').trim_end_matches('.');
        let mut out = Vec::new();
        push_keep(&mut out, k);
        assert_eq!(String::from_utf8(out).unwrap(), want, "keep {k}");
        checked += 1;
    }
    assert!(checked > 190_000);
}
