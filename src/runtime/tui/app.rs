//! The dashboard's render thread: it owns the terminal (through `TerminalGuard`), folds
//! run messages and keys into the `State`, carries out what keys ask of the run (stop,
//! rate scale, policy switch) and draws at least `FPS` frames a second. The engine thread
//! only ever sends it messages.

use std::io;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, TryRecvError, unbounded};
use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};

use super::msg::{Command, Key, Msg};
use super::observer::TuiObserver;
use super::state::State;
use super::terminal::TerminalGuard;
use super::view::render;
use crate::runtime::clock::WallClock;
use crate::runtime::controls::{PolicySwitch, RateScale, next_policy};
use crate::runtime::stop::{StopHandle, StopReason};
use crate::spec::{Policy, Workload};

/// Frames per second, at least (a frame also follows every key).
pub const FPS: u64 = 5;
/// How long the thread waits for a key before looking at messages again.
const KEY_POLL: Duration = Duration::from_millis(20);

/// What the dashboard's keys act on.
pub struct Controls {
    pub stop: StopHandle,
    /// Paced sources' rate factor (`+`/`-`); `None`: the keys only log that they can't.
    pub rate: Option<RateScale>,
    /// The policy switch and the policy the run starts with (`s`).
    pub policy: Option<(PolicySwitch, Policy)>,
}

/// The key a terminal key event means, if any.
pub fn key_of(code: KeyCode, modifiers: KeyModifiers) -> Option<Key> {
    Some(match code {
        KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => Key::Interrupt,
        KeyCode::Char('q') => Key::Quit,
        KeyCode::Char('p') => Key::Pause,
        KeyCode::Up | KeyCode::Char('k') => Key::Up,
        KeyCode::Down | KeyCode::Char('j') => Key::Down,
        KeyCode::Char('+') | KeyCode::Char('=') => Key::Faster,
        KeyCode::Char('-') => Key::Slower,
        KeyCode::Char('s') => Key::CyclePolicy,
        KeyCode::Char('?') | KeyCode::Char('h') => Key::Help,
        KeyCode::Esc => Key::Escape,
        _ => return None,
    })
}

/// Opens the dashboard on the terminal and returns the observer that feeds it. Fails
/// (before the run starts) when the terminal cannot be taken, e.g. stderr is no terminal.
pub fn start(w: &Workload, controls: Controls) -> io::Result<TuiObserver> {
    let (tx, rx) = unbounded();
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let handle: JoinHandle<()> = std::thread::Builder::new()
        .name("spillway-tui".into())
        .spawn(move || match TerminalGuard::enter() {
            Ok(guard) => {
                let _ = ready_tx.send(Ok(()));
                run(guard, rx, controls);
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        })?;
    ready_rx
        .recv()
        .map_err(|_| io::Error::other("the dashboard thread ended before it started"))??;
    let columns = w
        .streams
        .iter()
        .map(|s| s.schema.fields.iter().map(|f| f.name.clone()).collect())
        .collect();
    Ok(TuiObserver::new(
        tx,
        columns,
        Box::new(move || {
            let _ = handle.join();
        }),
    ))
}

/// The render loop: until the run ends (or the observer is gone).
fn run(mut guard: TerminalGuard, rx: Receiver<Msg>, mut controls: Controls) {
    let clock = WallClock::start();
    let frame_every = 1_000_000_000 / FPS as i64;
    let mut state = State::new();
    let mut next_frame = 0;
    loop {
        let mut dirty = false;
        // Keys first: they are what a person waits on.
        while let Ok(true) = event::poll(KEY_POLL) {
            match event::read() {
                Ok(TermEvent::Key(k)) if k.kind != KeyEventKind::Release => {
                    if let Some(key) = key_of(k.code, k.modifiers)
                        && let Some(cmd) = state.apply(Msg::Key(key))
                    {
                        act(cmd, &mut controls, &mut state);
                    }
                    dirty = true;
                }
                Ok(TermEvent::Resize(..)) => dirty = true,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let mut ended = false;
        loop {
            match rx.try_recv() {
                Ok(Msg::Ended) | Err(TryRecvError::Disconnected) => {
                    ended = true;
                    break;
                }
                Ok(m) => {
                    state.apply(m);
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        if ended {
            state.apply(Msg::Ended);
        }
        let now = clock.since_start();
        if dirty || ended || now >= next_frame {
            if guard.terminal.draw(|f| render(&state, f)).is_err() {
                // The terminal is gone; the run goes on, undrawn.
                drain(&rx);
                return;
            }
            next_frame = now + frame_every;
        }
        if ended {
            return;
        }
    }
}

/// Reads messages until the run ends, so the observer never blocks on a full channel.
fn drain(rx: &Receiver<Msg>) {
    while let Ok(m) = rx.recv() {
        if matches!(m, Msg::Ended) {
            return;
        }
    }
}

/// Carries out what a key asked of the run.
fn act(cmd: Command, controls: &mut Controls, state: &mut State) {
    match cmd {
        Command::Stop { interrupt } => controls.stop.request(if interrupt {
            StopReason::Interrupt
        } else {
            StopReason::Requested
        }),
        Command::ScaleRate(f) => match &controls.rate {
            Some(r) => {
                r.scale_by(f);
            }
            None => state.note("this run's sources cannot change rate"),
        },
        Command::CyclePolicy => match &mut controls.policy {
            Some((switch, current)) => {
                *current = next_policy(current);
                switch.request(current.clone());
                state.apply(Msg::PolicyRequested(current.name.clone()));
            }
            None => state.note("this run cannot change policy"),
        },
    }
}
