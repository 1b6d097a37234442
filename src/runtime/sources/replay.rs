//! The replay source: a JSONL or CSV file sent line by line, in file order, as fast as the
//! engine takes it (pull), at a rate profile, or at its recorded timestamps times a speed
//! factor; optionally in a loop. Malformed lines are counted like a socket's, with the file
//! and line number in the sample. The pacing is `ReplayClock`, pure and tested on chosen
//! times; the source only sleeps until what it says.

use std::fs::File;
use std::io::{self, Read};
use std::mem;
use std::pin::Pin;
use std::time::Duration;

use super::lines::{Line, LineBuffer};
use super::parse::{LineError, LineParser, ShowError};
use crate::core::batch::{Batch, Column};
use crate::core::schema::{DataType, Nanos};
use crate::runtime::source::{Closed, Source, SourceContext};
use crate::spec::{LineFormat, ReplayPace, ReplaySpec, StreamSpec};

/// Longest line a replayed file may hold.
const MAX_LINE: usize = 1 << 20;
/// At most one malformed report per this interval.
const SAMPLE_EVERY: Nanos = 100_000_000;
/// Longest sleep, so stops stay prompt.
const MAX_SLEEP: Duration = Duration::from_millis(10);

/// When each tuple of a timestamp-paced replay is due, as an offset from the replay's
/// start: `(ts - first ts) / speed`, each loop continuing one mean gap after the last.
/// A timestamp earlier than the one before it is due at once (file order is kept).
#[derive(Clone, Debug)]
pub struct ReplayClock {
    speed: f64,
    first: Option<Nanos>,
    /// Recorded time at which the current loop starts (0 for the first).
    loop_base: Nanos,
    last: Nanos,
    seen: u64,
}

impl ReplayClock {
    pub fn new(speed: f64) -> ReplayClock {
        ReplayClock {
            speed,
            first: None,
            loop_base: 0,
            last: 0,
            seen: 0,
        }
    }

    /// The offset at which the tuple recorded at `ts` is due.
    pub fn due(&mut self, ts: Nanos) -> Nanos {
        let first = *self.first.get_or_insert(ts);
        let recorded = (self.loop_base + ts.saturating_sub(first)).max(self.last);
        self.last = recorded;
        self.seen += 1;
        (recorded as f64 / self.speed) as Nanos
    }

    /// The file starts again: its first tuple comes one mean gap after the last one.
    pub fn restart(&mut self) {
        let gap = if self.seen > 1 {
            self.last / (self.seen as i64 - 1).max(1)
        } else {
            0
        };
        self.loop_base = self.last + gap;
        self.first = None;
    }
}

pub struct ReplaySource {
    file: File,
    spec: ReplaySpec,
    parser: LineParser,
    types: Vec<DataType>,
    /// Line 1 of a CSV file is its header, not a tuple.
    header: bool,
}

impl ReplaySource {
    /// Opens the file now, so a missing file fails before the run starts; a CSV file's
    /// header must name every schema field once.
    pub fn open(stream: &StreamSpec, spec: &ReplaySpec) -> io::Result<ReplaySource> {
        let fail = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("stream `{}`: replay file {}: {e}", stream.name, spec.file),
            )
        };
        let mut file = File::open(&spec.file).map_err(fail)?;
        let mut parser = LineParser::new(&stream.schema, spec.format);
        let header = spec.format == LineFormat::Csv;
        if header {
            let order = read_header(&mut file, &stream.schema).map_err(fail)?;
            parser.set_csv_order(order);
            file = File::open(&spec.file).map_err(fail)?;
        }
        Ok(ReplaySource {
            file,
            spec: spec.clone(),
            parser,
            types: stream.schema.types(),
            header,
        })
    }
}

/// For each column of the CSV header, the schema field it holds.
fn read_header(file: &mut File, schema: &crate::core::schema::Schema) -> io::Result<Vec<usize>> {
    let mut head = vec![0u8; 64 * 1024];
    let n = file.read(&mut head)?;
    let text = String::from_utf8_lossy(&head[..n]);
    let line = text.lines().next().unwrap_or("");
    let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
    let mut order = Vec::new();
    for name in line.split(',').map(|s| s.trim().trim_matches('"')) {
        match schema.index_of(name) {
            Some(i) if !order.contains(&i) => order.push(i),
            Some(_) => return Err(bad(format!("header names `{name}` twice"))),
            None => {
                return Err(bad(format!(
                    "header column `{name}` is not a field of the stream"
                )));
            }
        }
    }
    if order.len() != schema.len() {
        return Err(bad(format!(
            "the first line must be a header naming all {} fields, found `{line}`",
            schema.len()
        )));
    }
    Ok(order)
}

impl Source for ReplaySource {
    fn kind(&self) -> &'static str {
        "replay"
    }

    fn run(self: Box<Self>, ctx: SourceContext) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(self.replay(ctx))
    }
}

/// The replay's state between lines.
struct Run {
    batch: Batch,
    sent: u64,
    start: Nanos,
    clock: Option<ReplayClock>,
    malformed: u64,
    sample: Option<String>,
    next_report: Nanos,
}

impl ReplaySource {
    async fn replay(mut self, ctx: SourceContext) {
        let start = ctx.clock.now();
        let mut run = Run {
            batch: Batch::new(&self.types, ctx.batch_size),
            sent: 0,
            start,
            clock: match self.spec.pace {
                ReplayPace::Timestamps { speed, .. } => Some(ReplayClock::new(speed)),
                _ => None,
            },
            malformed: 0,
            sample: None,
            next_report: start,
        };
        loop {
            if self.pass(&ctx, &mut run).await.is_err() || ctx.stopped() || !self.spec.repeat {
                break;
            }
            if let Some(c) = &mut run.clock {
                c.restart();
            }
            match File::open(&self.spec.file) {
                Ok(f) => self.file = f,
                Err(_) => break,
            }
        }
        let _ = self.send(&ctx, &mut run).await;
        let _ = report(&ctx, &mut run, true).await;
    }

    /// One pass over the file.
    async fn pass(&mut self, ctx: &SourceContext, run: &mut Run) -> Result<(), Closed> {
        let mut lines = LineBuffer::new(MAX_LINE);
        loop {
            let n = match self.file.read(lines.space()) {
                Ok(0) | Err(_) => {
                    if lines.finish() {
                        self.bad(run, lines.line_no, &LineError::Unterminated);
                    }
                    return Ok(());
                }
                Ok(n) => n,
            };
            lines.filled(n);
            while let Some((no, line)) = lines.next_line() {
                if ctx.stopped() {
                    return Err(Closed);
                }
                let l = match line {
                    Line::Text(_) if no == 1 && self.header => continue,
                    Line::Text([]) => continue,
                    Line::Text(l) => l,
                    Line::TooLong => {
                        self.bad(run, no, &LineError::TooLong(MAX_LINE));
                        continue;
                    }
                };
                if let Err(e) = self.parser.parse_into(l, ctx.clock.now(), &mut run.batch) {
                    self.bad(run, no, &e);
                    continue;
                }
                self.pace(ctx, run).await?;
                if run.batch.len() >= ctx.batch_size {
                    self.send(ctx, run).await?;
                }
            }
            report(ctx, run, false).await?;
            tokio::task::yield_now().await;
        }
    }

    /// Waits until the tuple just parsed (the batch's last row) is due; what was parsed
    /// before it is sent first.
    async fn pace(&mut self, ctx: &SourceContext, run: &mut Run) -> Result<(), Closed> {
        let due = match (&self.spec.pace, &mut run.clock) {
            (ReplayPace::Unpaced, _) => return Ok(()),
            (ReplayPace::Timestamps { column, .. }, Some(clock)) => {
                let Column::Int(ts) = &run.batch.columns[*column] else {
                    return Ok(());
                };
                run.start + clock.due(ts[ts.len() - 1])
            }
            (ReplayPace::Rate(rate), _) => {
                // The first tuple beyond `sent + rows - 1` is due when the profile says.
                let index = run.sent + run.batch.len() as u64;
                let mut lo = ctx.clock.now() - run.start;
                if rate.count_until(lo) >= index {
                    return Ok(());
                }
                let mut step: Nanos = 1_000_000;
                while rate.count_until(lo + step) < index && step < 3_600_000_000_000 {
                    lo += step;
                    step *= 2;
                }
                run.start + lo + step
            }
            _ => return Ok(()),
        };
        if ctx.clock.now() >= due {
            return Ok(());
        }
        // Hold the tuple back; what came before it goes now.
        let rows = run.batch.len();
        let mut held = Batch::new(&self.types, ctx.batch_size);
        held.gather_from(&run.batch, &[(rows - 1) as u32]);
        truncate(&mut run.batch, rows - 1);
        self.send(ctx, run).await?;
        run.batch = held;
        loop {
            let now = ctx.clock.now();
            if now >= due || ctx.stopped() {
                break;
            }
            ctx.advance(now);
            let wait = Duration::from_nanos((due - now) as u64).min(MAX_SLEEP);
            tokio::time::sleep(wait).await;
            report(ctx, run, false).await?;
        }
        // Stamped when due, not when read.
        let now = ctx.clock.now();
        run.batch.arrival.iter_mut().for_each(|a| *a = now);
        Ok(())
    }

    async fn send(&mut self, ctx: &SourceContext, run: &mut Run) -> Result<(), Closed> {
        if run.batch.is_empty() {
            return Ok(());
        }
        let b = mem::replace(&mut run.batch, Batch::new(&self.types, ctx.batch_size));
        run.sent += b.len() as u64;
        ctx.send(b).await?;
        ctx.advance(ctx.clock.now());
        Ok(())
    }

    fn bad(&self, run: &mut Run, line: u64, e: &LineError) {
        run.malformed += 1;
        if run.sample.is_none() {
            run.sample = Some(format!(
                "{} line {line}: {}",
                self.spec.file,
                ShowError(e, self.parser.schema())
            ));
        }
    }
}

/// Reports malformed lines, at most once per `SAMPLE_EVERY` unless `now`.
async fn report(ctx: &SourceContext, run: &mut Run, force: bool) -> Result<(), Closed> {
    let now = ctx.clock.now();
    if run.malformed == 0 || (!force && now < run.next_report) {
        return Ok(());
    }
    run.next_report = now + SAMPLE_EVERY;
    let sample = run.sample.take().unwrap_or_default();
    ctx.malformed(mem::take(&mut run.malformed), sample).await
}

fn truncate(b: &mut Batch, rows: usize) {
    b.arrival.truncate(rows);
    for c in &mut b.columns {
        match c {
            Column::Int(v) => v.truncate(rows),
            Column::Float(v) => v.truncate(rows),
            Column::Str(v) => v.truncate(rows),
            Column::Bool(v) => v.truncate(rows),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn recorded_spacing_is_kept_scaled_by_speed_and_order_is_file_order() {
        let mut c = ReplayClock::new(2.0);
        let t0 = 1_700_000_000 * S;
        let due: Vec<Nanos> = [t0, t0 + S, t0 + S, t0 + 3 * S, t0 + 2 * S, t0 + 7 * S]
            .iter()
            .map(|&t| c.due(t))
            .collect();
        // Half the recorded gaps; the early timestamp (t0 + 2 s) is due with its
        // predecessor, never before it.
        assert_eq!(due, vec![0, S / 2, S / 2, 3 * S / 2, 3 * S / 2, 7 * S / 2]);
        assert!(due.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn a_loop_continues_one_mean_gap_after_the_last_tuple() {
        let mut c = ReplayClock::new(1.0);
        for t in [10 * S, 12 * S, 14 * S] {
            c.due(t);
        }
        c.restart();
        // Mean gap 2 s: the second pass starts at 6 s and keeps its spacing.
        assert_eq!(c.due(10 * S), 6 * S);
        assert_eq!(c.due(12 * S), 8 * S);
    }
}
