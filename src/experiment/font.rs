//! The one font the experiment's plots use, compiled into the binary: a subset of DejaVu
//! Sans (printable ASCII and a few symbols such as ± and µ; licence in
//! `font/LICENSE-DejaVu.txt`). Invariant: PNG text never depends on fonts or font
//! libraries installed on the machine, so plots look the same on a bare Debian host.

use std::sync::OnceLock;

static FONT: &[u8] = include_bytes!("font/DejaVuSans-subset.ttf");

/// Registers the font for the families the plots name (`sans-serif`), once per process.
pub fn register() -> Result<(), Box<dyn std::error::Error>> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT)
            .is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err("the embedded plot font cannot be read".into())
    }
}
