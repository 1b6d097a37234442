//! Nexmark generator tests: the documented proportions, determinism per seed whatever the
//! batch sizes, and bids that name auctions and persons that exist (or are about to).

use super::*;
use crate::core::batch::Column;

fn generator(event: NexmarkEvent, seed: u64) -> NexmarkGenerator {
    let columns = fields_of(event).iter().map(|(_, f, _)| *f).collect();
    NexmarkGenerator::new(event, seed, columns)
}

fn types(event: NexmarkEvent) -> Vec<DataType> {
    fields_of(event).iter().map(|(_, _, t)| *t).collect()
}

/// All events of `event` among the first `events`, made in chunks of `chunk`.
fn all(event: NexmarkEvent, seed: u64, events: u64, chunk: usize) -> Batch {
    let mut g = generator(event, seed);
    let mut out = Batch::new(&types(event), 0);
    while g.events() < events {
        let mut b = Batch::new(&types(event), chunk);
        g.fill(&mut b, events, chunk, 1_000 + out.len() as Nanos, 1);
        out.extend_from(&b);
    }
    out
}

fn ints(b: &Batch, col: usize) -> &[i64] {
    match &b.columns[col] {
        Column::Int(v) => v,
        c => panic!("not an int column: {c:?}"),
    }
}

#[test]
fn proportions_are_one_three_forty_six() {
    let n = 100_000;
    let counts: Vec<usize> = [
        NexmarkEvent::Person,
        NexmarkEvent::Auction,
        NexmarkEvent::Bid,
    ]
    .iter()
    .map(|&e| all(e, 1, n, 1000).len())
    .collect();
    assert_eq!(counts, vec![2_000, 6_000, 92_000]);
}

#[test]
fn the_same_seed_gives_the_same_events_whatever_the_chunks() {
    for e in [
        NexmarkEvent::Person,
        NexmarkEvent::Auction,
        NexmarkEvent::Bid,
    ] {
        let a = all(e, 42, 20_000, 1024);
        let b = all(e, 42, 20_000, 7);
        assert_eq!(a.columns, b.columns, "{e:?}");
        let c = all(e, 43, 20_000, 1024);
        assert_ne!(a.columns, c.columns, "{e:?}: another seed, other values");
    }
}

#[test]
fn ids_are_sequential_and_bids_name_existing_auctions_and_persons() {
    let events = 50_000;
    let persons = all(NexmarkEvent::Person, 3, events, 512);
    let auctions = all(NexmarkEvent::Auction, 3, events, 512);
    let bids = all(NexmarkEvent::Bid, 3, events, 512);
    let pid = ints(&persons, 0);
    let aid = ints(&auctions, 0);
    assert!(pid.iter().enumerate().all(|(i, &id)| id == 1000 + i as i64));
    assert!(aid.iter().enumerate().all(|(i, &id)| id == 1000 + i as i64));
    let (max_a, max_p) = (aid[aid.len() - 1], pid[pid.len() - 1]);
    let (auction, bidder, price) = (ints(&bids, 0), ints(&bids, 1), ints(&bids, 2));
    assert!(
        auction
            .iter()
            .all(|&a| (1000..=max_a + ID_LEAD as i64).contains(&a))
    );
    assert!(
        bidder
            .iter()
            .all(|&p| (1000..=max_p + ID_LEAD as i64).contains(&p))
    );
    assert!(price.iter().all(|&p| (100..=100_000_000).contains(&p)));
    // Half the bids go to hot auctions (multiples of 100 above 1000).
    let hot = auction.iter().filter(|&&a| (a - 1000) % 100 == 0).count();
    let share = hot as f64 / auction.len() as f64;
    assert!((0.45..0.6).contains(&share), "hot share {share}");
    // Sellers and categories are in range; reserves exceed initial bids.
    let (initial, reserve) = (ints(&auctions, 3), ints(&auctions, 4));
    assert!(initial.iter().zip(reserve).all(|(i, r)| r > i));
    assert!(ints(&auctions, 8).iter().all(|c| (10..15).contains(c)));
}
