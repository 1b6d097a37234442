//! Input generators: rate profiles say how many tuples are due, field distributions say
//! what they hold. Everything here is pure and deterministic: the same seed gives the same
//! tuples, whatever the batch sizes and however the run is sliced into calls.

mod field;
pub mod nexmark;
mod rate;
mod sampler;
mod stream;

pub use field::FieldGen;
pub use rate::RateProfile;
pub use stream::{StreamGenerator, mix_seed};
