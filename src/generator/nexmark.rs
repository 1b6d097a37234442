//! The Nexmark auction benchmark's event stream, written to the benchmark's specification
//! (the Beam/Flink generator's constants): events numbered from 0, event `n` is a person,
//! an auction or a bid by `n mod 50` (1 : 3 : 46), and every value of an event depends only
//! on the seed and its number. Invariant: determinism per event number, so a stream of bids
//! and a stream of auctions with the same seed agree (bids name auctions and persons that
//! exist), whatever the batch sizes.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::mix_seed;
use crate::core::batch::{Batch, Column, Dict};
use crate::core::schema::{DataType, Nanos};
use crate::spec::NexmarkEvent;

/// Events per proportion cycle, and the first offsets of auctions and bids within one.
pub const CYCLE: u64 = 50;
const AUCTION_FROM: u64 = 1;
const BID_FROM: u64 = 4;
/// Ids start here, as in the reference generator.
const FIRST_PERSON_ID: i64 = 1000;
const FIRST_AUCTION_ID: i64 = 1000;
const FIRST_CATEGORY_ID: i64 = 10;
const NUM_CATEGORIES: i64 = 5;
/// One bid in `HOT_AUCTION_RATIO` goes to a random recent auction, the others to a hot one.
const HOT_AUCTION_RATIO: u64 = 2;
const HOT_BIDDER_RATIO: u64 = 4;
const HOT_SELLER_RATIO: u64 = 100;
/// Hot items are every 100th auction or person.
const HOT_STRIDE: u64 = 100;
const IN_FLIGHT_AUCTIONS: u64 = 100;
const ACTIVE_PEOPLE: u64 = 1000;
/// Bids may name auctions and persons a little ahead of the last one created.
const ID_LEAD: u64 = 10;

const FIRST_NAMES: [&str; 8] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie",
];
const LAST_NAMES: [&str; 8] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones",
];
const CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
const STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
const CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];

/// What an event is, by its number.
pub fn kind_of(n: u64) -> NexmarkEvent {
    match n % CYCLE {
        o if o < AUCTION_FROM => NexmarkEvent::Person,
        o if o < BID_FROM => NexmarkEvent::Auction,
        _ => NexmarkEvent::Bid,
    }
}

/// Persons created by events `0..=n` minus one (the index of the last person), and the same
/// for auctions.
fn last_person(n: u64) -> u64 {
    n / CYCLE
}
fn last_auction(n: u64) -> u64 {
    let (epoch, o) = (n / CYCLE, n % CYCLE);
    (epoch * (BID_FROM - AUCTION_FROM) + o.min(BID_FROM - AUCTION_FROM)).saturating_sub(1)
}

/// A field of a Nexmark event, as a schema may name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NexmarkField {
    Id,
    Name,
    EmailAddress,
    CreditCard,
    City,
    State,
    DateTime,
    Extra,
    ItemName,
    Description,
    InitialBid,
    Reserve,
    Expires,
    Seller,
    Category,
    Auction,
    Bidder,
    Price,
    Channel,
    Url,
}

/// The fields of each event, with their names and types, in the benchmark's order.
pub fn fields_of(event: NexmarkEvent) -> &'static [(&'static str, NexmarkField, DataType)] {
    use DataType::{Int, Str, Timestamp};
    use NexmarkField as F;
    match event {
        NexmarkEvent::Person => &[
            ("id", F::Id, Int),
            ("name", F::Name, Str),
            ("email_address", F::EmailAddress, Str),
            ("credit_card", F::CreditCard, Str),
            ("city", F::City, Str),
            ("state", F::State, Str),
            ("date_time", F::DateTime, Timestamp),
            ("extra", F::Extra, Str),
        ],
        NexmarkEvent::Auction => &[
            ("id", F::Id, Int),
            ("item_name", F::ItemName, Str),
            ("description", F::Description, Str),
            ("initial_bid", F::InitialBid, Int),
            ("reserve", F::Reserve, Int),
            ("date_time", F::DateTime, Timestamp),
            ("expires", F::Expires, Timestamp),
            ("seller", F::Seller, Int),
            ("category", F::Category, Int),
            ("extra", F::Extra, Str),
        ],
        NexmarkEvent::Bid => &[
            ("auction", F::Auction, Int),
            ("bidder", F::Bidder, Int),
            ("price", F::Price, Int),
            ("channel", F::Channel, Str),
            ("url", F::Url, Str),
            ("date_time", F::DateTime, Timestamp),
            ("extra", F::Extra, Str),
        ],
    }
}

/// One event's values (the fields its kind has; the others stay at their defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Values {
    id: i64,
    name: usize,
    card: usize,
    city: usize,
    state: usize,
    item: usize,
    initial_bid: i64,
    reserve: i64,
    expires_in: Nanos,
    seller: i64,
    category: i64,
    auction: i64,
    bidder: i64,
    price: i64,
    channel: usize,
    url: usize,
}

/// A price in cents, log-uniform from $1 to $1,000,000 as in the reference generator.
fn price(rng: &mut SmallRng) -> i64 {
    (10f64.powf(rng.random::<f64>() * 6.0) * 100.0).round() as i64
}

fn pick(rng: &mut SmallRng, n: u64) -> u64 {
    rng.random_range(0..n)
}

/// A recent or slightly future auction (index), or a hot one.
fn bid_auction(rng: &mut SmallRng, n: u64) -> u64 {
    let last = last_auction(n);
    if pick(rng, HOT_AUCTION_RATIO) > 0 {
        return last / HOT_STRIDE * HOT_STRIDE;
    }
    let min = last.saturating_sub(IN_FLIGHT_AUCTIONS);
    min + pick(rng, last - min + 1 + ID_LEAD)
}

/// An active person (index), or a hot one (`hot_ratio`: one in that many is not hot).
fn some_person(rng: &mut SmallRng, n: u64, hot_ratio: u64) -> u64 {
    let people = last_person(n) + 1;
    if pick(rng, hot_ratio) > 0 {
        return (people - 1) / HOT_STRIDE * HOT_STRIDE;
    }
    let active = people.min(ACTIVE_PEOPLE);
    people - active + pick(rng, active + ID_LEAD)
}

/// The values of event `n` (its kind is `kind_of(n)`).
fn values(seed: u64, n: u64) -> Values {
    let mut rng = SmallRng::seed_from_u64(mix_seed(seed, n));
    let mut v = Values::default();
    match kind_of(n) {
        NexmarkEvent::Person => {
            v.id = FIRST_PERSON_ID + last_person(n) as i64;
            v.name = pick(&mut rng, (FIRST_NAMES.len() * LAST_NAMES.len()) as u64) as usize;
            v.card = pick(&mut rng, CARDS as u64) as usize;
            v.city = pick(&mut rng, CITIES.len() as u64) as usize;
            v.state = pick(&mut rng, STATES.len() as u64) as usize;
        }
        NexmarkEvent::Auction => {
            v.id = FIRST_AUCTION_ID + last_auction(n) as i64;
            v.item = pick(&mut rng, ITEMS as u64) as usize;
            v.initial_bid = price(&mut rng);
            v.reserve = v.initial_bid + price(&mut rng);
            // Open for 10 s to 10 min.
            v.expires_in = 10_000_000_000 + rng.random_range(0..590_000_000_000);
            v.seller = FIRST_PERSON_ID + some_person(&mut rng, n, HOT_SELLER_RATIO) as i64;
            v.category = FIRST_CATEGORY_ID + rng.random_range(0..NUM_CATEGORIES);
        }
        NexmarkEvent::Bid => {
            v.auction = FIRST_AUCTION_ID + bid_auction(&mut rng, n) as i64;
            v.bidder = FIRST_PERSON_ID + some_person(&mut rng, n, HOT_BIDDER_RATIO) as i64;
            v.price = price(&mut rng);
            v.channel = pick(&mut rng, CHANNELS.len() as u64) as usize;
            v.url = pick(&mut rng, URLS as u64) as usize;
        }
    }
    v
}

const CARDS: usize = 64;
const ITEMS: usize = 256;
const URLS: usize = 64;

/// One field's pre-built values: a dictionary every batch shares, and each value's code.
type Coded = (Arc<Dict>, Vec<u32>);

/// Pre-built strings: a row is a code into one of these dictionaries, never a fresh
/// allocation or a reference count.
#[derive(Clone, Debug)]
struct Strings {
    names: Coded,
    emails: Coded,
    cards: Coded,
    cities: Coded,
    states: Coded,
    items: Coded,
    descriptions: Coded,
    channels: Coded,
    urls: Coded,
    empty: Coded,
}

impl Strings {
    fn new() -> Strings {
        let arcs = |v: Vec<String>| Dict::of(&v.into_iter().map(Arc::from).collect::<Vec<_>>());
        let names: Vec<String> = FIRST_NAMES
            .iter()
            .flat_map(|f| LAST_NAMES.iter().map(move |l| format!("{f} {l}")))
            .collect();
        let emails = names
            .iter()
            .map(|n| format!("{}@nexmark.example", n.replace(' ', ".").to_lowercase()))
            .collect();
        Strings {
            emails: arcs(emails),
            names: arcs(names),
            cards: arcs(
                (0..CARDS)
                    .map(|i| {
                        format!(
                            "{:04} {:04} {:04} {:04}",
                            1000 + i,
                            2000 + i * 7,
                            3000 + i * 13,
                            4000 + i * 31
                        )
                    })
                    .collect(),
            ),
            cities: arcs(CITIES.iter().map(|s| s.to_string()).collect()),
            states: arcs(STATES.iter().map(|s| s.to_string()).collect()),
            items: arcs((0..ITEMS).map(|i| format!("item-{i}")).collect()),
            descriptions: arcs(
                (0..ITEMS)
                    .map(|i| format!("description of item {i}"))
                    .collect(),
            ),
            channels: arcs(CHANNELS.iter().map(|s| s.to_string()).collect()),
            urls: arcs(
                (0..URLS)
                    .map(|i| {
                        format!(
                            "https://www.nexmark.example/{}/item.htm?query={i}",
                            CHANNELS[i % 4].to_lowercase()
                        )
                    })
                    .collect(),
            ),
            empty: Dict::of(&[Arc::from("")]),
        }
    }
}

/// Generates one Nexmark stream's tuples: the events of one kind among event numbers
/// `0, 1, 2, ...`, each field from `columns`.
#[derive(Clone, Debug)]
pub struct NexmarkGenerator {
    event: NexmarkEvent,
    seed: u64,
    columns: Vec<NexmarkField>,
    strings: Strings,
    /// The next event number (of any kind) to consider.
    next: u64,
}

impl NexmarkGenerator {
    pub fn new(event: NexmarkEvent, seed: u64, columns: Vec<NexmarkField>) -> NexmarkGenerator {
        NexmarkGenerator {
            event,
            seed,
            columns,
            strings: Strings::new(),
            next: 0,
        }
    }

    /// Events of all kinds considered so far.
    pub fn events(&self) -> u64 {
        self.next
    }

    /// Appends this stream's events among the next event numbers up to (excluding)
    /// `until` to `out`, at most `max` of them; the `k`-th appended arrives (and carries
    /// `date_time`) `first_arrival + k * spacing`. Returns how many were appended.
    pub fn fill(
        &mut self,
        out: &mut Batch,
        until: u64,
        max: usize,
        first_arrival: Nanos,
        spacing: Nanos,
    ) -> usize {
        let mut k = 0;
        while self.next < until && k < max {
            let n = self.next;
            self.next += 1;
            if kind_of(n) != self.event {
                continue;
            }
            let t = first_arrival + k as Nanos * spacing;
            self.push(out, n, t);
            k += 1;
        }
        k
    }

    fn push(&self, out: &mut Batch, n: u64, t: Nanos) {
        let v = values(self.seed, n);
        let s = &self.strings;
        out.arrival.push(t);
        for (col, f) in out.columns.iter_mut().zip(&self.columns) {
            use NexmarkField as F;
            match (col, *f) {
                (Column::Int(c), F::DateTime) => c.push(t),
                (Column::Int(c), F::Expires) => c.push(t + v.expires_in),
                (Column::Int(c), f) => c.push(match f {
                    F::Id => v.id,
                    F::InitialBid => v.initial_bid,
                    F::Reserve => v.reserve,
                    F::Seller => v.seller,
                    F::Category => v.category,
                    F::Auction => v.auction,
                    F::Bidder => v.bidder,
                    _ => v.price,
                }),
                (Column::Str(c), f) => {
                    let ((dict, codes), i) = match f {
                        F::Name => (&s.names, v.name),
                        F::EmailAddress => (&s.emails, v.name),
                        F::CreditCard => (&s.cards, v.card),
                        F::City => (&s.cities, v.city),
                        F::State => (&s.states, v.state),
                        F::ItemName => (&s.items, v.item),
                        F::Description => (&s.descriptions, v.item),
                        F::Channel => (&s.channels, v.channel),
                        F::Url => (&s.urls, v.url),
                        _ => (&s.empty, 0),
                    };
                    c.push_coded(dict, codes[i]);
                }
                // Validation gives every field its event type; nothing else reaches here.
                (Column::Float(c), _) => c.push(0.0),
                (Column::Bool(c), _) => c.push(false),
            }
        }
    }
}

#[cfg(test)]
#[path = "nexmark_tests.rs"]
mod tests;
