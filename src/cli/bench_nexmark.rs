//! `spillway bench`, Nexmark part: q0 (pass-through), q1 (currency conversion) and q2
//! (selection) over the bid stream on one engine thread, in bids per second (a bid is 46
//! of every 50 Nexmark events); once on pre-generated batches (generator excluded), once
//! generating each batch on the same thread just before it is ingested (generator
//! included). The issue's goal is 5 M events/s per core; published Rust anchors reach
//! about 0.8-0.9 M.

use super::Failure;
use super::outln;
use crate::core::batch::Batch;
use crate::core::schema::Nanos;
use crate::generator::nexmark::NexmarkGenerator;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::spec::{self, SourceKind, Workload};

const QUERIES: [(&str, &str); 3] = [
    (
        "q0 pass-through",
        "SELECT auction, bidder, price, date_time FROM bid",
    ),
    (
        "q1 currency conversion",
        "SELECT auction, bidder, price * 0.908 AS euros, date_time FROM bid",
    ),
    (
        "q2 selection",
        "SELECT auction, price FROM bid WHERE auction % 123 = 0",
    ),
];

fn workload(sql: &str, batch_size: usize) -> Result<Workload, Failure> {
    let yaml = format!(
        r#"name: bench-nexmark
seed: 7
engine: {{batch_size: {batch_size}, queue_capacity: 100000000, queue_memory: 64GiB}}
streams:
  bid:
    schema: {{auction: int, bidder: int, price: int, channel: string, date_time: timestamp}}
    event_time: date_time
    source: {{nexmark: {{event: bid, rate: unlimited}}}}
queries:
  q:
    sql: "{sql}"
    sink: none
"#
    );
    spec::parse(&yaml, "<bench-nexmark>").map_err(|e| Failure::Other(anyhow::anyhow!("{e}")))
}

fn generator(w: &Workload) -> NexmarkGenerator {
    let SourceKind::Nexmark(n) = &w.streams[0].source.kind else {
        unreachable!("the bench stream is nexmark")
    };
    NexmarkGenerator::new(n.event, n.seed, n.columns.clone())
}

/// Bids, 1 µs apart, in batches of `batch_size`, until `bids` are made.
fn fill(g: &mut NexmarkGenerator, b: &mut Batch, batch_size: usize, t: Nanos) -> usize {
    g.fill(b, u64::MAX, batch_size, t, 1_000)
}

/// Runs each query over `bids` bid events, without then with the generator on the clock.
pub fn bench_nexmark(bids: u64, batch_size: usize) -> Result<(), Failure> {
    let clock = WallClock::start();
    let w = workload(QUERIES[0].1, batch_size)?;
    let types = w.streams[0].schema.types();
    let mut g = generator(&w);
    let mut batches = Vec::new();
    let (mut made, mut t) = (0u64, 0);
    let start = clock.since_start();
    while made < bids {
        let mut b = Batch::new(&types, batch_size);
        let n = fill(&mut g, &mut b, batch_size.min((bids - made) as usize), t);
        made += n as u64;
        t += n as Nanos * 1_000;
        batches.push(b);
    }
    let generation = clock.since_start() - start;
    report("nexmark: bid generator alone", made, generation);
    for (name, sql) in QUERIES {
        let w = workload(sql, batch_size)?;
        let (rows, alone) = engine_only(&w, &batches, &clock)?;
        std::hint::black_box(rows);
        report(
            &format!("nexmark: {name}, one engine thread, generator excluded"),
            made,
            alone,
        );

        let mut engine = engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
        let mut g = generator(&w);
        let (mut done, mut t, mut rows) = (0u64, 0, 0usize);
        let start = clock.since_start();
        while done < made {
            let mut b = Batch::new(&types, batch_size);
            let n = fill(&mut g, &mut b, batch_size.min((made - done) as usize), t);
            done += n as u64;
            t += n as Nanos * 1_000;
            engine.ingest(0, b);
            engine.run_turn(0);
            engine.emit(0, |e| rows += e.batch.len());
        }
        engine.flush(0);
        engine.emit(0, |e| rows += e.batch.len());
        std::hint::black_box(rows);
        report(
            &format!("nexmark: {name}, one thread, generator included"),
            made,
            clock.since_start() - start,
        );
    }
    Ok(())
}

/// Runs `w`'s query over copies of `batches` (copied before timing); rows out and time.
fn engine_only(
    w: &Workload,
    batches: &[Batch],
    clock: &WallClock,
) -> Result<(usize, Nanos), Failure> {
    let mut engine = engine_for(w).map_err(|e| anyhow::anyhow!(e))?;
    let copies = batches.to_vec();
    let mut rows = 0usize;
    let start = clock.since_start();
    for b in copies {
        engine.ingest(0, b);
        engine.run_turn(0);
        engine.emit(0, |e| rows += e.batch.len());
    }
    engine.flush(0);
    engine.emit(0, |e| rows += e.batch.len());
    Ok((rows, clock.since_start() - start))
}

fn report(what: &str, events: u64, ns: Nanos) {
    let secs = (ns as f64 / 1e9).max(1e-9);
    outln!(
        "{what:<66} {:>8.2} M bids/s ({:.1} ns/bid; a bid is 46 of 50 Nexmark events)",
        events as f64 / secs / 1e6,
        ns as f64 / events.max(1) as f64
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::batch::Column;

    #[test]
    fn q0_passes_every_bid_and_q2_selects_what_a_direct_count_selects() {
        let w = workload(QUERIES[0].1, 256)
            .ok()
            .expect("the bench workload parses");
        let types = w.streams[0].schema.types();
        let mut g = generator(&w);
        let mut batches = Vec::new();
        let (mut bids, mut selected) = (0usize, 0usize);
        for _ in 0..20 {
            let mut b = Batch::new(&types, 256);
            bids += fill(&mut g, &mut b, 256, 0);
            let Column::Int(auction) = &b.columns[0] else {
                panic!("auction is an int column")
            };
            selected += auction.iter().filter(|a| *a % 123 == 0).count();
            batches.push(b);
        }
        let clock = WallClock::start();
        let rows = |sql| {
            engine_only(&workload(sql, 256).ok().unwrap(), &batches, &clock)
                .ok()
                .unwrap()
                .0
        };
        assert_eq!(rows(QUERIES[0].1), bids);
        assert_eq!(rows(QUERIES[1].1), bids);
        assert!(selected > 0);
        assert_eq!(rows(QUERIES[2].1), selected);
    }
}
