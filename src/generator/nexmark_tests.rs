//! Nexmark generator tests: proportions, determinism, referential consistency.

use super::*;

#[test]
fn proportions_are_one_three_forty_six() {
    let mut counts = [0u64; 3];
    for n in 0..100_000 {
        counts[match kind_of(n) {
            NexmarkEvent::Person => 0,
            NexmarkEvent::Auction => 1,
            NexmarkEvent::Bid => 2,
        }] += 1;
    }
    assert_eq!(counts, [2_000, 6_000, 92_000]);
}
