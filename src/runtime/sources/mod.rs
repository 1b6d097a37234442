//! The sources that bring outside data in (`tcp`, `replay`) and the Nexmark stream, each in
//! its own file, plus what the line-based ones share: splitting bytes into lines with a
//! length limit (`lines`) and parsing lines into tuples without allocation (`parse`).

pub mod lines;
pub mod nexmark;
pub mod parse;
mod parse_csv;
mod parse_json;
pub mod replay;
pub mod tcp;
