//! The generator of one stream: appends tuples to batches. Its invariant is determinism:
//! the tuples depend only on the seed, the field distributions and each tuple's index and
//! arrival time, never on how the tuples are split into `fill` calls.

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::field::FieldGen;
use super::sampler::{Run, Sampler, push_zeros};
use crate::core::batch::Batch;
use crate::core::schema::{Nanos, Schema};

/// Mixes a seed with an index (splitmix64), giving independent, stable seeds for parts of a
/// run: the workload seed and a stream's position give the stream's seed, the stream's seed
/// and a field's position give the field's seed.
pub fn mix_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draws the tuples of one stream.
///
/// Every field has its own random generator seeded from `(seed, field index)`, so adding or
/// changing one field leaves the values of the others unchanged.
#[derive(Clone, Debug)]
pub struct StreamGenerator {
    samplers: Vec<Sampler>,
    rngs: Vec<SmallRng>,
    generated: u64,
}

impl StreamGenerator {
    /// A generator for `schema`, field `i` drawn from `fields[i]`. Missing entries, and
    /// distributions that do not fit their field's type, fall back to
    /// `FieldGen::default_for` the field's type (spec validation reports the latter).
    pub fn new(schema: &Schema, fields: Vec<FieldGen>, seed: u64) -> StreamGenerator {
        let mut fields = fields.into_iter();
        let samplers = schema
            .fields
            .iter()
            .map(|f| {
                let g = fields.next().unwrap_or_else(|| FieldGen::default_for(f.ty));
                Sampler::new(&g, f.ty)
            })
            .collect();
        let rngs = (0..schema.len())
            .map(|i| SmallRng::seed_from_u64(mix_seed(seed, i as u64)))
            .collect();
        StreamGenerator {
            samplers,
            rngs,
            generated: 0,
        }
    }

    /// Appends `n` tuples to `out`, a batch built with the schema's types; tuple `k` of the
    /// call arrives at `first_arrival + k * spacing`.
    pub fn fill(&mut self, out: &mut Batch, n: usize, first_arrival: Nanos, spacing: Nanos) {
        let run = Run {
            first_index: self.generated,
            first_arrival,
            spacing,
            len: n,
        };
        out.arrival.extend((0..n).map(|k| run.arrival(k)));
        for (i, col) in out.columns.iter_mut().enumerate() {
            match (self.samplers.get(i), self.rngs.get_mut(i)) {
                (Some(s), Some(rng)) => s.fill(rng, col, run),
                _ => push_zeros(col, n),
            }
        }
        self.generated += n as u64;
    }

    /// How many tuples this generator has produced.
    pub fn generated(&self) -> u64 {
        self.generated
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::batch::Column;
    use crate::core::schema::{DataType, Field, Scalar};

    fn schema() -> Schema {
        let f = |name: &str, ty| Field {
            name: name.into(),
            ty,
        };
        Schema::new(vec![
            f("sensor", DataType::Int),
            f("temp", DataType::Float),
            f("city", DataType::Str),
            f("ok", DataType::Bool),
            f("ts", DataType::Timestamp),
            f("seq", DataType::Int),
        ])
    }

    fn gens() -> Vec<FieldGen> {
        vec![
            FieldGen::Zipf { n: 100, s: 1.1 },
            FieldGen::Normal {
                mean: 20.0,
                stddev: 5.0,
            },
            FieldGen::Choice {
                values: vec!["oslo".into(), "rome".into(), "never".into()],
                weights: Some(vec![3.0, 1.0, 0.0]),
            },
            FieldGen::Bernoulli { p: 0.3 },
            FieldGen::Now,
            FieldGen::Sequence {
                start: Scalar::Int(10),
                step: Scalar::Int(5),
            },
        ]
    }

    fn generate(seed: u64, n: usize, chunk: usize) -> Batch {
        let s = schema();
        let mut g = StreamGenerator::new(&s, gens(), seed);
        let mut out = Batch::new(&s.types(), n);
        let mut done = 0;
        while done < n {
            let k = chunk.min(n - done);
            g.fill(&mut out, k, 1000 + done as i64 * 10, 10);
            done += k;
        }
        assert_eq!(g.generated(), n as u64);
        assert!(out.is_consistent());
        out
    }

    fn ints(b: &Batch, i: usize) -> &[i64] {
        match &b.columns[i] {
            Column::Int(v) => v,
            c => panic!("not an int column: {c:?}"),
        }
    }

    fn floats(b: &Batch, i: usize) -> &[f64] {
        match &b.columns[i] {
            Column::Float(v) => v,
            c => panic!("not a float column: {c:?}"),
        }
    }

    #[test]
    fn chunking_does_not_change_the_tuples() {
        let whole = generate(42, 1000, 1000);
        assert_eq!(whole, generate(42, 1000, 7));
        assert_eq!(whole, generate(42, 1000, 1));
        assert_ne!(whole.columns[0], generate(43, 1000, 1000).columns[0]);
    }

    #[test]
    fn adding_a_field_leaves_the_others_unchanged() {
        let s = schema();
        let mut wider = s.clone();
        wider.fields.push(Field {
            name: "extra".into(),
            ty: DataType::Float,
        });
        let mut a = Batch::new(&s.types(), 100);
        let mut b = Batch::new(&wider.types(), 100);
        StreamGenerator::new(&s, gens(), 7).fill(&mut a, 100, 0, 1);
        StreamGenerator::new(&wider, gens(), 7).fill(&mut b, 100, 0, 1);
        assert_eq!(a.columns[..], b.columns[..s.len()]);
        assert!(b.is_consistent());
    }

    #[test]
    fn sequence_and_now_are_exact() {
        let b = generate(1, 50, 7);
        let expected: Vec<i64> = (0..50).map(|k| 10 + 5 * k).collect();
        assert_eq!(ints(&b, 5), &expected[..]);
        let arrivals: Vec<i64> = (0..50).map(|k| 1000 + 10 * k).collect();
        assert_eq!(ints(&b, 4), &arrivals[..]);
        assert_eq!(b.arrival, arrivals);
    }

    #[test]
    fn distributions_are_roughly_right() {
        let b = generate(9, 20_000, 1024);
        let temps = floats(&b, 1);
        let mean = temps.iter().sum::<f64>() / temps.len() as f64;
        assert!((mean - 20.0).abs() < 0.2, "normal mean {mean}");
        let var = temps.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / temps.len() as f64;
        assert!(
            (var.sqrt() - 5.0).abs() < 0.2,
            "normal stddev {}",
            var.sqrt()
        );

        let keys = ints(&b, 0);
        let mut counts = vec![0usize; 101];
        for &k in keys {
            assert!((1..=100).contains(&k), "zipf key {k}");
            counts[k as usize] += 1;
        }
        let top = (1..=100).max_by_key(|&k| counts[k]).unwrap();
        assert_eq!(top, 1, "zipf key 1 must be the most frequent");

        let Column::Str(cities) = &b.columns[2] else {
            panic!("not a string column")
        };
        let oslo = cities.iter().filter(|c| &***c == "oslo").count();
        assert!(cities.iter().all(|c| &**c != "never"), "zero weight drawn");
        let share = oslo as f64 / cities.len() as f64;
        assert!((share - 0.75).abs() < 0.02, "weighted choice share {share}");

        let Column::Bool(oks) = &b.columns[3] else {
            panic!("not a bool column")
        };
        let p = oks.iter().filter(|&&x| x).count() as f64 / oks.len() as f64;
        assert!((p - 0.3).abs() < 0.02, "bernoulli share {p}");
    }

    #[test]
    fn uniform_stays_in_bounds_and_defaults_apply() {
        let s = Schema::new(vec![
            Field {
                name: "i".into(),
                ty: DataType::Int,
            },
            Field {
                name: "f".into(),
                ty: DataType::Float,
            },
            Field {
                name: "bad".into(),
                ty: DataType::Float,
            },
        ]);
        let g = vec![
            FieldGen::UniformInt { min: -3, max: 3 },
            FieldGen::UniformFloat { min: 2.0, max: 2.5 },
            // Does not fit a float field: falls back to the float default.
            FieldGen::Zipf { n: 10, s: 1.0 },
        ];
        let mut out = Batch::new(&s.types(), 5000);
        StreamGenerator::new(&s, g, 3).fill(&mut out, 5000, 0, 0);
        let i = ints(&out, 0);
        assert!(i.iter().all(|v| (-3..=3).contains(v)));
        assert!(i.contains(&-3) && i.contains(&3), "inclusive bounds");
        assert!(floats(&out, 1).iter().all(|v| (2.0..2.5).contains(v)));
        assert!(floats(&out, 2).iter().all(|v| (0.0..1.0).contains(v)));
    }
}
