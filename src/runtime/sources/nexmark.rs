//! The Nexmark source: one Nexmark stream (persons, auctions or bids) generated on the wall
//! clock at its rate profile, which counts events of all three kinds; the stream sends the
//! events of its kind, stamped and dated with the time they are made.

use std::pin::Pin;
use std::time::Duration;

use crate::core::batch::Batch;
use crate::core::schema::DataType;
use crate::generator::nexmark::{CYCLE, NexmarkGenerator};
use crate::runtime::source::{Source, SourceContext};
use crate::spec::{NexmarkSpec, StreamSpec};

/// How often a paced stream wakes up to produce what is due.
const TICK: Duration = Duration::from_millis(1);
/// Batches made before yielding, so stops stay prompt at any rate.
const BURST: usize = 64;

pub struct NexmarkSource {
    generator: NexmarkGenerator,
    spec: NexmarkSpec,
    types: Vec<DataType>,
}

impl NexmarkSource {
    pub fn new(stream: &StreamSpec, spec: &NexmarkSpec) -> NexmarkSource {
        NexmarkSource {
            generator: NexmarkGenerator::new(spec.event, spec.seed, spec.columns.clone()),
            spec: spec.clone(),
            types: stream.schema.types(),
        }
    }

    async fn produce(mut self, ctx: SourceContext) {
        let limit = self.spec.count.unwrap_or(u64::MAX);
        let unlimited = self.spec.rate.is_unlimited();
        let start = ctx.clock.epoch_at_start();
        // Enough events of all kinds to fill a burst of batches of even the rarest kind.
        let burst_events = (BURST * ctx.batch_size) as u64 * CYCLE;
        while !ctx.stopped() && self.generator.events() < limit {
            let due = if unlimited {
                self.generator.events().saturating_add(burst_events)
            } else {
                self.spec.rate.count_until(ctx.clock.now() - start)
            }
            .min(limit);
            let mut burst = 0;
            while self.generator.events() < due && burst < BURST && !ctx.stopped() {
                let mut batch = Batch::new(&self.types, ctx.batch_size);
                let n = self
                    .generator
                    .fill(&mut batch, due, ctx.batch_size, ctx.clock.now(), 0);
                if n > 0 && ctx.send(batch).await.is_err() {
                    return;
                }
                burst += 1;
            }
            ctx.advance(ctx.clock.now());
            if unlimited || self.generator.events() < due {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(TICK).await;
            }
        }
    }
}

impl Source for NexmarkSource {
    fn kind(&self) -> &'static str {
        "nexmark"
    }

    fn run(self: Box<Self>, ctx: SourceContext) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(self.produce(ctx))
    }
}
