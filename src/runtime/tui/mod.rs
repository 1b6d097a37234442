//! The terminal dashboard of `spillway run --tui`: a state, a reducer and a pure view
//! (after shared/STYLE.md), fed by an observer.
//!
//! ```text
//!  engine thread                         render thread (spillway-tui)
//!  TuiObserver::on_tick/on_event ──Msg──▶ State::apply ──▶ view::render ──▶ stderr
//!   (owned copies, no waiting)            ▲ keys (crossterm)  │ at >= 5 fps
//!                                         └── Command: StopHandle, RateScale, PolicySwitch
//! ```
//!
//! `msg` holds what crosses threads, `observer` makes it, `state` is the reducer, `view`
//! and `panels` draw, `words` writes figures and predicates, `terminal` guards the
//! terminal, `app` is the render thread, `pace` plays simulated runs at wall speed.

pub mod app;
pub mod msg;
pub mod observer;
pub mod pace;
pub mod panels;
pub mod state;
pub mod terminal;
pub mod view;
pub mod words;

pub use app::{Controls, start};
pub use observer::TuiObserver;
pub use pace::Pacer;
pub use state::State;

#[cfg(test)]
mod tests_state;
#[cfg(test)]
mod tests_view;
