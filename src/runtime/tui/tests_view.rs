//! View tests: fixed states drawn on ratatui's `TestBackend`, asserting the texts that
//! matter (query names, percentiles, keep fractions, the predicate in words, the state).

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::msg::{Key, Msg};
use super::state::State;
use super::tests_state::{started, tick};
use super::view::render;
use crate::runtime::observe::Event;

/// The screen `state` draws at `w` x `h`, one string per row.
fn screen(state: &State, w: u16, h: u16) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| render(state, f)).unwrap();
    let buf = t.backend().buffer().clone();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect())
        .collect()
}

fn has(screen: &[String], text: &str) -> bool {
    screen.iter().any(|l| l.contains(text))
}

fn shedding() -> State {
    let mut s = started();
    s.apply(Msg::Tick(Box::new(tick(4.0, 0.5, 0))));
    s.apply(Msg::Tick(Box::new(tick(5.0, 2.4, 5000))));
    s
}

#[test]
fn normal_run_shows_header_queries_and_details() {
    let mut s = started();
    s.apply(Msg::Tick(Box::new(tick(3.0, 0.5, 0))));
    let out = screen(&s, 120, 40);
    assert!(has(&out, "sensors"), "{out:#?}");
    assert!(has(&out, "policy semantic"));
    assert!(has(&out, "3.0 / 20.0 s"));
    assert!(has(&out, " OK "));
    assert!(has(&out, "demand 0.50x capacity"));
    assert!(has(&out, "hot"));
    assert!(has(&out, "per_city"));
    // p99 20 ms and p50 5 ms of `hot`, its keep and utility.
    let hot = out.iter().find(|l| l.contains("│hot")).unwrap();
    assert!(
        hot.contains("20.0") && hot.contains("5.00") && hot.contains("1.00"),
        "{hot}"
    );
    // Details of the selected query: percentiles of the last second.
    assert!(has(
        &out,
        "p50 11.0  p90 30.0  p99 42.0  p99.9 55.0  max 61.0"
    ));
    // Charts at this height.
    assert!(has(&out, "demand / capacity"));
    assert!(has(&out, "p99 ms vs target"));
}

#[test]
fn shedding_run_shows_state_keep_and_the_predicate_in_words() {
    let out = screen(&shedding(), 120, 40);
    assert!(has(&out, "SHEDDING"), "{out:#?}");
    assert!(has(&out, "demand 2.40x capacity"));
    let hot = out.iter().find(|l| l.contains("│hot")).unwrap();
    assert!(hot.contains("0.30"), "{hot}");
    assert!(
        has(&out, "semantic temp < 30 dropped; 30 <= temp < 35 kept 40%"),
        "{out:#?}"
    );
    // The value histogram marks the dropped bins.
    assert!(has(&out, "xxxxxxxxxxxx~~~~"), "{out:#?}");
    assert!(has(&out, "shed /s by reason"));
}

#[test]
fn violating_run_says_so_and_logs_the_violation() {
    let mut s = shedding();
    s.apply(Msg::Event(Event::ViolationBegan {
        at: 5_000_000_000,
        query: 1,
        latency: 1_800_000_000,
        target: 1_500_000_000,
    }));
    let out = screen(&s, 120, 40);
    assert!(has(&out, "VIOLATING"), "{out:#?}");
    assert!(has(&out, "SHEDDING"));
    assert!(has(&out, "per_city: 1800 ms > target 1500 ms"));
}

#[test]
fn small_terminal_hides_charts_but_keeps_the_figures() {
    let out = screen(&shedding(), 80, 24);
    assert!(!has(&out, "demand / capacity"), "{out:#?}");
    assert!(has(&out, "SHEDDING"));
    assert!(has(&out, "hot"));
    assert!(has(&out, "per_city"));
    assert!(has(&out, "temp < 30 dropped"));
    let tiny = screen(&shedding(), 30, 8);
    assert!(has(&tiny, "terminal too small"), "{tiny:#?}");
}

#[test]
fn help_overlay_and_pause_badge() {
    let mut s = shedding();
    s.apply(Msg::Key(Key::Help));
    s.apply(Msg::Key(Key::Pause));
    s.apply(Msg::Key(Key::Down));
    let out = screen(&s, 100, 30);
    assert!(has(&out, "PAUSED"), "{out:#?}");
    assert!(has(&out, "press again to abort"));
    // The selected query's details pane follows the selection.
    assert!(has(&out, "┌ per_city"));
}

#[test]
fn the_newest_event_stays_on_screen_when_older_ones_wrap_at_word_breaks() {
    let mut s = shedding();
    for i in 0..14 {
        s.note(&format!("rate x{i}.00 (by hand)"));
    }
    // Wraps at word breaks into more rows than its length over the width suggests
    // (the dashboard's own plan line from a CI run that hid the next event).
    s.note("plan: shedding, keep trend 0.10, extremes 0.00, hot 0.82, stream#0 0.58 (4 changes)");
    s.apply(Msg::PolicyRequested("random".into()));
    let out = screen(&s, 120, 40);
    assert!(has(&out, "policy -> random (by hand)"), "{out:#?}");
    assert!(has(&out, "(4 "), "{out:#?}");
}
