//! The dashboard's hold on the terminal: raw mode and the alternate screen, drawn on
//! stderr so stdout stays free for result rows. Invariant: whatever way the dashboard
//! ends (the run ends, an abort, an error, a panic on any thread), the terminal is given
//! back: `TerminalGuard` restores on drop and the panic hook restores before the panic
//! message is printed. Restoring twice is harmless.

use std::io::{self, Stderr};
use std::sync::Once;

use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type Term = Terminal<CrosstermBackend<Stderr>>;

/// Puts the terminal back as it was: main screen, cooked mode, cursor shown.
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stderr(), LeaveAlternateScreen, Show);
}

/// Owns the terminal while the dashboard draws; restores it when dropped.
pub struct TerminalGuard {
    pub terminal: Term,
}

impl TerminalGuard {
    /// Takes the terminal: raw mode, alternate screen, and a panic hook that restores it.
    pub fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        let guard = |e: io::Error| {
            restore();
            e
        };
        // No `Terminal::clear`: it asks the terminal for the cursor position, written to
        // stdout, which may be a file here; a full-screen viewport needs no cursor.
        execute!(
            io::stderr(),
            EnterAlternateScreen,
            Clear(ClearType::All),
            Hide
        )
        .map_err(guard)?;
        let terminal = Terminal::new(CrosstermBackend::new(io::stderr())).map_err(guard)?;
        Ok(TerminalGuard { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Once per process: a panic anywhere restores the terminal, then reports as usual.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
