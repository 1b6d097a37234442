//! QoS measurement and the load model: EWMA smoothing, latency percentiles over the last N
//! ticks, value histograms for semantic shedding, utility of delivered results, and Aurora's
//! load coefficients. Everything here is arithmetic on numbers the runtime passes in: no
//! I/O, no clock, and the per-tuple calls (`record`, `bin_of`) never allocate.

mod cost;
mod ewma;
mod latency_window;
mod load;
mod robust;
mod row_rate;
mod utility;
mod value_hist;

pub use cost::CostModel;
pub use ewma::Ewma;
pub use latency_window::{LatencyWindow, MergeScratch};
pub use load::{LoadReport, QueryLoad, StreamLoad, engine_load, non_negative, stream_coefficients};
pub use robust::{ROBUST_TICKS, RobustRate, SPAN_TICKS, SpanRate, bounded};
pub use row_rate::RowRate;
pub use utility::{UtilityCurve, loss_between, loss_slope, loss_utility};
pub use value_hist::{Binning, ValueHistogram};
