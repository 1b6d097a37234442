//! Workload errors: every problem of a file, each with the file, line, column and the
//! dotted path of the setting it concerns. Parsing collects them all before giving up, so a
//! user fixes a file in one round.

use std::fmt;

use super::locate::locate;

/// One problem in a workload file.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct SpecError {
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
    /// Dotted path of the setting, e.g. `queries.hot.qos.latency` or
    /// `streams.readings.rate.steps[1].at`; empty for the file as a whole.
    pub path: String,
    pub message: String,
}

impl SpecError {
    /// `message` about the setting at dotted `path` of workload `file`, whose text is
    /// `text`: located there (or at its nearest written ancestor). For checks made after
    /// parsing, by whoever knows what the setting cannot do.
    pub fn located(file: &str, text: &str, path: &str, message: impl Into<String>) -> SpecError {
        let (line, column) = locate(text, path);
        SpecError {
            file: file.to_string(),
            line,
            column,
            path: path.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// All the problems of a workload file, in file order; displayed one per line.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct SpecErrors {
    pub errors: Vec<SpecError>,
}

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Collects the errors of one file, locating each path in the text.
pub(crate) struct Diagnostics<'a> {
    text: &'a str,
    file: &'a str,
    errors: Vec<SpecError>,
}

impl<'a> Diagnostics<'a> {
    pub fn new(text: &'a str, file: &'a str) -> Diagnostics<'a> {
        Diagnostics {
            text,
            file,
            errors: Vec::new(),
        }
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Reports `message` about the setting at `path`, located in the text.
    pub fn at(&mut self, path: &str, message: impl Into<String>) {
        let (line, column) = locate(self.text, path);
        self.at_position(line, column, path, message);
    }

    /// Reports `message` at a known position.
    pub fn at_position(
        &mut self,
        line: usize,
        column: usize,
        path: &str,
        message: impl Into<String>,
    ) {
        self.errors.push(SpecError {
            file: self.file.to_string(),
            line,
            column,
            path: path.to_string(),
            message: message.into(),
        });
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn count(&self) -> usize {
        self.errors.len()
    }

    /// Whether a problem was reported at a direct child of `path` that is not one of
    /// `known` (an unknown key).
    pub fn has_unknown_key_under(&self, path: &str, known: &[&str]) -> bool {
        self.errors.iter().any(|e| {
            e.path
                .strip_prefix(path)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|key| !key.contains('.') && !known.contains(&key))
        })
    }

    /// Whether a problem was already reported at `path` or inside it (a key that failed
    /// to read is left out of its entry; its absence should not be reported again).
    pub fn has_error_under(&self, path: &str) -> bool {
        self.errors.iter().any(|e| {
            e.path == path
                || e.path
                    .strip_prefix(path)
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        })
    }

    /// The errors in file order (stable, so errors at one place keep their order).
    pub fn finish(mut self) -> SpecErrors {
        self.errors.sort_by_key(|e| (e.line, e.column));
        SpecErrors {
            errors: self.errors,
        }
    }
}

/// Joins a parent path and a key: `join("streams", "readings") == "streams.readings"`;
/// an empty side leaves the other unchanged.
pub(crate) fn join(parent: &str, key: &str) -> String {
    match (parent.is_empty(), key.is_empty()) {
        (true, _) => key.to_string(),
        (false, true) => parent.to_string(),
        (false, false) => format!("{parent}.{key}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_file_line_column_path_message() {
        let e = SpecError {
            file: "w.yaml".into(),
            line: 3,
            column: 5,
            path: "streams.readings".into(),
            message: "boom".into(),
        };
        assert_eq!(e.to_string(), "w.yaml:3:5: streams.readings: boom");
        let root = SpecError {
            path: String::new(),
            ..e.clone()
        };
        assert_eq!(root.to_string(), "w.yaml:3:5: boom");
        let all = SpecErrors {
            errors: vec![e, root],
        };
        assert_eq!(all.to_string().lines().count(), 2);
    }
}
