//! Dictionary columns: appends and gathers across dictionaries keep every row's value; a
//! shared dictionary is shared, not copied; the memory charge is what rows of `Arc<str>`
//! were charged.

use std::sync::Arc;

use super::*;

fn col(values: &[&str]) -> StrColumn {
    let mut c = StrColumn::with_capacity(values.len());
    for v in values {
        c.push(&Arc::from(*v));
    }
    c
}

fn texts(c: &StrColumn) -> Vec<&str> {
    c.iter().map(|s| &**s).collect()
}

#[test]
fn push_keeps_one_code_per_distinct_value() {
    let c = col(&["oslo", "rome", "oslo", "lima", "rome"]);
    assert_eq!(c.dict().len(), 3);
    assert_eq!(c.codes(), &[0, 1, 0, 2, 1]);
    assert_eq!(texts(&c), ["oslo", "rome", "oslo", "lima", "rome"]);
    assert_eq!(&*c[3], "lima");
}

#[test]
fn gather_into_an_empty_column_shares_the_dictionary() {
    let src = col(&["a", "b", "c", "b"]);
    let mut out = StrColumn::with_capacity(4);
    out.gather_from(&src, &[1, 3]);
    assert!(Arc::ptr_eq(out.dict(), src.dict()));
    assert_eq!(texts(&out), ["b", "b"]);
    // Appending more of the same dictionary copies codes and still shares it.
    out.gather_from(&src, &[0, 2]);
    assert!(Arc::ptr_eq(out.dict(), src.dict()));
    assert_eq!(texts(&out), ["b", "b", "a", "c"]);
    // The source keeps its values however the copy grows afterwards.
    out.push(&Arc::from("zz"));
    assert!(!Arc::ptr_eq(out.dict(), src.dict()));
    assert_eq!(texts(&src), ["a", "b", "c", "b"]);
    assert_eq!(src.dict().len(), 3);
    assert_eq!(texts(&out), ["b", "b", "a", "c", "zz"]);
}

#[test]
fn gather_and_extend_across_dictionaries_recode() {
    let first = col(&["x", "y", "x"]);
    // The same values in another order, and one new one.
    let second = col(&["z", "y", "x", "z", "z"]);
    let mut out = StrColumn::with_capacity(0);
    out.extend_from(&first);
    out.gather_from(&second, &[0, 2, 3]);
    out.extend_from(&second);
    assert_eq!(
        texts(&out),
        ["x", "y", "x", "z", "x", "z", "z", "y", "x", "z", "z"]
    );
    // Distinct values stay distinct codes: three values, three codes.
    assert_eq!(out.dict().len(), 3);
    // A few rows of a large dictionary are re-coded one by one (no table of its size).
    let big: Vec<String> = (0..100).map(|i| format!("v{i}")).collect();
    let big = col(&big.iter().map(String::as_str).collect::<Vec<_>>());
    out.gather_from(&big, &[99, 7]);
    assert_eq!(texts(&out)[11..], ["v99", "v7"]);
    assert_eq!(out.dict().len(), 5);
}

#[test]
fn coded_rows_adopt_a_fixed_dictionary() {
    let values: Vec<Arc<str>> = ["oslo", "rome", "oslo"].map(Arc::from).to_vec();
    let (dict, codes) = Dict::of(&values);
    assert_eq!(dict.len(), 2);
    assert_eq!(codes, [0, 1, 0]);
    let mut a = StrColumn::with_capacity(4);
    a.extend_coded(&dict, [1, 0].into_iter());
    a.extend_coded(&dict, [1].into_iter());
    assert!(Arc::ptr_eq(a.dict(), &dict));
    assert_eq!(texts(&a), ["rome", "oslo", "rome"]);
    // A column with rows of its own re-codes them into its dictionary.
    let mut b = col(&["lima"]);
    b.extend_coded(&dict, [0, 1].into_iter());
    assert_eq!(texts(&b), ["lima", "oslo", "rome"]);
    assert_eq!(dict.len(), 2, "the shared dictionary is never written");
}

#[test]
fn clear_and_truncate_keep_values_right() {
    let mut c = col(&["a", "b", "c"]);
    c.truncate(1);
    assert_eq!(texts(&c), ["a"]);
    c.push(&Arc::from("c"));
    assert_eq!(texts(&c), ["a", "c"]);
    let shared = c.clone();
    c.clear();
    assert!(c.is_empty());
    assert_eq!(
        texts(&shared),
        ["a", "c"],
        "clearing never empties a shared dictionary"
    );
    c.push(&Arc::from("d"));
    assert_eq!(texts(&c), ["d"]);
    assert_eq!(c.dict().len(), 1);
}

#[test]
fn equality_is_by_value_whatever_the_dictionary() {
    let a = col(&["p", "q", "p"]);
    let mut b = col(&["q", "p"]);
    b.clear();
    b.push(&Arc::from("q"));
    b.push(&Arc::from("p"));
    let mut c = StrColumn::with_capacity(3);
    c.push(&Arc::from("p"));
    c.extend_from(&b);
    c.truncate(2);
    c.push(&Arc::from("p"));
    assert_eq!(a, c);
    assert_ne!(a, col(&["p", "q", "q"]));
    assert_eq!(format!("{a:?}"), r#"["p", "q", "p"]"#);
}

#[test]
fn heap_bytes_are_charged_as_rows_of_arc_str() {
    let c = col(&["oslo", "rome!", "oslo"]);
    let ptr = std::mem::size_of::<Arc<str>>();
    let word = std::mem::size_of::<usize>();
    assert_eq!(c.heap_bytes(), 3 * ptr + (4 + 5 + 4) + 3 * 2 * word);
    // A dictionary too large for the table on the stack is charged the same way.
    let mut big = StrColumn::with_capacity(400);
    (0..300).for_each(|i| big.push(&format!("{i:04}").into()));
    big.truncate(0);
    ["oslo", "rome!", "oslo"]
        .iter()
        .for_each(|s| big.push(&Arc::from(*s)));
    assert_eq!(big.dict().len(), 302);
    assert_eq!(big.heap_bytes(), 400 * ptr + (4 + 5 + 4) + 3 * 2 * word);
}

/// Shards are the hash of the value: the same whether hashed per dictionary value (a
/// dictionary no larger than the rows) or per row (a larger one).
#[test]
fn shards_hash_values_under_any_dictionary() {
    use crate::core::batch::{Batch, Column};
    use crate::core::schema::DataType;
    use crate::core::shard::{ShardMap, key_hash_str, shards_of};
    let texts = ["oslo", "rome", "oslo", "lima", "x1", "rome", "pune", "oslo"];
    let small = col(&texts);
    let mut large = StrColumn::with_capacity(texts.len());
    (0..40).for_each(|i| large.push(&format!("unused{i}").into()));
    large.truncate(0);
    texts.iter().for_each(|s| large.push(&Arc::from(*s)));
    let want: Vec<u32> = texts.iter().map(|s| (key_hash_str(s) & 7) as u32).collect();
    let map = ShardMap::new(8, 2);
    for c in [small, large] {
        let mut b = Batch::new(&[DataType::Str], texts.len());
        b.arrival.extend(0..texts.len() as i64);
        b.columns[0] = Column::Str(c);
        let mut got = Vec::new();
        shards_of(&b, 0, 8, &mut got);
        assert_eq!(got, want);
        for worker in 0..2 {
            let mut sel: Vec<u32> = (0..texts.len() as u32).collect();
            map.filter(0, worker).retain(&b, &mut sel);
            let owned: Vec<u32> = (0..texts.len() as u32)
                .filter(|&i| map.owner(want[i as usize] as usize) == worker)
                .collect();
            assert_eq!(sel, owned, "worker {worker}");
        }
    }
}
