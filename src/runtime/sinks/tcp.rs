//! The TCP result sink: a query's rows as JSON lines to a listener, written by a thread of
//! its own so the engine never waits on the network. The engine side encodes rows into
//! chunks and hands them over while the bytes held stay within the buffer; the writer
//! connects, reconnects with a doubling backoff, and writes.
//!
//! Invariant: every row handed to `write` is, in the end, either written to a connection
//! the listener had not closed when the write began, or counted as lost (`take_lost`):
//! rows that overflow the buffer, rows of a write that failed (it may have been cut off
//! mid-line, so the connection is dropped), and rows still held when `close` gives up.
//! What the kernel had accepted when the listener vanished is the one blind spot.

use std::io::{self, Read, Write};
use std::mem;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::core::engine::Emitted;
use crate::core::schema::Nanos;
use crate::runtime::clock::WallClock;
use crate::runtime::sink::{Sink, write_rows};
use crate::spec::TcpSinkSpec;

/// Bytes encoded before a chunk goes to the writer (also on every flush), at most a
/// quarter of the buffer.
const CHUNK: usize = 64 << 10;
/// First wait after a failed connect; doubles up to `BACKOFF_MAX`.
const BACKOFF_MIN: Nanos = 50_000_000;
const BACKOFF_MAX: Nanos = 2_000_000_000;
/// How long `close` keeps trying to deliver what is held to a listener that is away.
const GRACE: Nanos = 1_000_000_000;
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// A write blocked this long (a listener that stopped reading) fails the connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);
/// How often a writer waiting to reconnect checks whether the run is closing.
const POLL: Duration = Duration::from_millis(10);

/// Encoded rows on their way to the writer.
struct Chunk {
    bytes: Vec<u8>,
    rows: u64,
}

/// What the engine side and the writer share.
#[derive(Default)]
struct Shared {
    /// Bytes handed to the writer and not yet written or dropped.
    held: AtomicUsize,
    /// Rows the writer dropped since `take_lost` last asked.
    lost: AtomicU64,
    /// Why, once per outage and kind, until `take_lost` reports them.
    notes: Mutex<Vec<String>>,
    /// The run is over: give up on a listener that is away after `GRACE`.
    closing: AtomicBool,
}

impl Shared {
    fn note(&self, message: String) {
        if let Ok(mut n) = self.notes.lock()
            && n.len() < 4
            && !n.contains(&message)
        {
            n.push(message);
        }
    }

    fn done(&self, chunk: &Chunk, delivered: bool) {
        self.held.fetch_sub(chunk.bytes.len(), Ordering::Relaxed);
        if !delivered {
            self.lost.fetch_add(chunk.rows, Ordering::Relaxed);
        }
    }
}

/// JSON lines to `connect`; see the module doc.
pub struct TcpSink {
    addr: SocketAddr,
    limit: usize,
    chunk: usize,
    pending: Vec<u8>,
    pending_rows: u64,
    tx: Option<Sender<Chunk>>,
    shared: Arc<Shared>,
    /// Rows dropped here because the buffer was full, since `take_lost` last asked.
    overflow: u64,
    /// Whether this outage's overflow was reported (reset once the buffer drains).
    overflow_noted: bool,
    writer: Option<JoinHandle<()>>,
}

impl TcpSink {
    /// Starts the writer; it connects in the background (the listener need not be up yet).
    pub fn start(spec: &TcpSinkSpec) -> io::Result<TcpSink> {
        let (tx, rx) = channel();
        let shared = Arc::new(Shared::default());
        let (addr, sh) = (spec.connect, shared.clone());
        let writer = std::thread::Builder::new()
            .name("spillway-sink-tcp".into())
            .spawn(move || Writer::new(addr, sh).run(rx))?;
        Ok(TcpSink {
            addr: spec.connect,
            limit: spec.buffer,
            chunk: CHUNK.min(spec.buffer / 4),
            pending: Vec::with_capacity(CHUNK),
            pending_rows: 0,
            tx: Some(tx),
            shared,
            overflow: 0,
            overflow_noted: false,
            writer: Some(writer),
        })
    }

    /// Passes the encoded rows to the writer, or counts them if the buffer is full.
    fn hand_off(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let len = self.pending.len();
        let held = self.shared.held.load(Ordering::Relaxed);
        let Some(tx) = self.tx.as_ref().filter(|_| held + len <= self.limit) else {
            self.overflow += self.pending_rows;
            if !self.overflow_noted {
                self.overflow_noted = true;
                self.shared.note(format!(
                    "tcp {}: buffer of {} bytes full; rows that do not fit are counted as \
                     undelivered",
                    self.addr, self.limit
                ));
            }
            self.pending.clear();
            self.pending_rows = 0;
            return;
        };
        if held == 0 {
            self.overflow_noted = false;
        }
        let chunk = Chunk {
            bytes: mem::replace(&mut self.pending, Vec::with_capacity(CHUNK)),
            rows: mem::take(&mut self.pending_rows),
        };
        self.shared.held.fetch_add(len, Ordering::Relaxed);
        if let Err(e) = tx.send(chunk) {
            // The writer is gone (it cannot be, short of a panic): count, never drop.
            self.shared.done(&e.0, false);
        }
    }
}

impl Sink for TcpSink {
    fn write(&mut self, r: &Emitted<'_>) -> io::Result<()> {
        write_rows(&mut self.pending, r)?;
        self.pending_rows += r.batch.len() as u64;
        if self.pending.len() >= self.chunk {
            self.hand_off();
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_off();
        Ok(())
    }

    fn take_lost(&mut self) -> (u64, Option<String>) {
        let rows = mem::take(&mut self.overflow) + self.shared.lost.swap(0, Ordering::Relaxed);
        let note = self
            .shared
            .notes
            .lock()
            .ok()
            .map(|mut n| mem::take(&mut *n).join("; "))
            .filter(|n| !n.is_empty());
        (rows, note)
    }

    fn close(&mut self) -> io::Result<()> {
        self.hand_off();
        self.shared.closing.store(true, Ordering::Relaxed);
        self.tx = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        Ok(())
    }
}

impl Drop for TcpSink {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// The writer thread's state.
struct Writer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    clock: WallClock,
    conn: Option<TcpStream>,
    backoff: Nanos,
    retry_at: Nanos,
    closing_since: Option<Nanos>,
}

impl Writer {
    fn new(addr: SocketAddr, shared: Arc<Shared>) -> Writer {
        Writer {
            addr,
            shared,
            clock: WallClock::start(),
            conn: None,
            backoff: BACKOFF_MIN,
            retry_at: 0,
            closing_since: None,
        }
    }

    fn run(mut self, rx: Receiver<Chunk>) {
        while let Ok(chunk) = rx.recv() {
            let delivered = self.deliver(&chunk);
            self.shared.done(&chunk, delivered);
        }
        if let Some(s) = self.conn.take() {
            let _ = s.shutdown(Shutdown::Write);
        }
    }

    /// Writes `chunk` once a connection is up; false if it is lost.
    fn deliver(&mut self, chunk: &Chunk) -> bool {
        loop {
            if self.conn.as_mut().is_some_and(peer_closed) {
                self.conn = None;
                self.lost_connection("the listener closed the connection".into());
            }
            let Some(conn) = self.conn.as_mut() else {
                if self.given_up() {
                    return false;
                }
                self.connect();
                continue;
            };
            return match conn.write_all(&chunk.bytes) {
                Ok(()) => true,
                Err(e) => {
                    // Possibly cut off mid-line: the connection cannot carry on.
                    self.conn = None;
                    self.lost_connection(e.to_string());
                    false
                }
            };
        }
    }

    /// Whether the run is over and the grace to reach the listener has passed.
    fn given_up(&mut self) -> bool {
        if !self.shared.closing.load(Ordering::Relaxed) {
            return false;
        }
        let now = self.clock.since_start();
        now - *self.closing_since.get_or_insert(now) >= GRACE
    }

    /// One connection attempt when the backoff allows it, else a short wait.
    fn connect(&mut self) {
        let now = self.clock.since_start();
        if now < self.retry_at {
            let wait = Duration::from_nanos((self.retry_at - now) as u64);
            std::thread::sleep(wait.min(POLL));
            return;
        }
        match TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
                self.conn = Some(s);
                self.backoff = BACKOFF_MIN;
            }
            Err(e) => {
                // Reported once per outage: a connection that never came up is one too.
                if self.backoff == BACKOFF_MIN {
                    self.shared.note(format!(
                        "tcp {}: cannot connect ({e}); retrying with backoff, rows held up to \
                         the buffer",
                        self.addr
                    ));
                }
                self.retry_at = self.clock.since_start() + self.backoff;
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
            }
        }
    }

    fn lost_connection(&mut self, why: String) {
        self.shared.note(format!(
            "tcp {}: connection lost ({why}); reconnecting with backoff",
            self.addr
        ));
        // The first retry is at once; later ones back off.
        self.retry_at = 0;
    }
}

/// Whether the listener closed its end (it never sends: anything it does is discarded).
fn peer_closed(s: &mut TcpStream) -> bool {
    if s.set_nonblocking(true).is_err() {
        return true;
    }
    let mut buf = [0u8; 512];
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break true,
        }
    };
    closed || s.set_nonblocking(false).is_err()
}
