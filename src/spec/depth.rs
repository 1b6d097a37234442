//! The nesting-depth guard run before any YAML text reaches the YAML parser: it rejects a
//! document nested deeper than `MAX_DEPTH` (flow brackets `[`/`{`, block indentation and
//! `- ` sequence markers together) in one linear pass, so a hostile file of nested
//! brackets fails fast with a located error instead of costing the parser quadratic time.
//!
//! Invariant: the scan is O(text length) and never allocates more than one level stack;
//! text inside quotes, comments and block scalars (`|`, `>`) is content, not nesting.

/// The deepest nesting a workload or policy file may use. Real files use fewer than ten.
pub(crate) const MAX_DEPTH: usize = 64;

/// Where a document first nests deeper than `MAX_DEPTH`: 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooDeep {
    pub line: usize,
    pub column: usize,
}

impl TooDeep {
    pub fn message(&self) -> String {
        format!("the document nests deeper than {MAX_DEPTH} levels; flatten it")
    }
}

/// The first place `text` nests deeper than `MAX_DEPTH`, if any.
pub(crate) fn too_deep(text: &str) -> Option<TooDeep> {
    // Indentation of each open block level.
    let mut indents: Vec<usize> = Vec::new();
    // Open flow brackets (they may span lines).
    let mut flow = 0usize;
    // Inside a block scalar started by a line of this indentation.
    let mut block_scalar: Option<usize> = None;
    let mut quote: Option<u8> = None;
    for (l, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let indent = bytes.iter().take_while(|&&b| b == b' ').count();
        let blank = indent == bytes.len() || bytes[indent] == b'#';
        if let Some(base) = block_scalar {
            if blank || indent > base {
                continue;
            }
            block_scalar = None;
        }
        if blank && quote.is_none() {
            continue;
        }
        let mut i = indent;
        if flow == 0 && quote.is_none() {
            while indents.last().is_some_and(|&top| top > indent) {
                indents.pop();
            }
            if indents.last().is_none_or(|&top| top < indent) {
                indents.push(indent);
            }
            // `- - - x` opens one level per marker on the same line.
            let mut extra = 0;
            while i + 1 < bytes.len() && bytes[i] == b'-' && bytes[i + 1] == b' ' {
                extra += 1;
                i += 2;
                while i < bytes.len() && bytes[i] == b' ' {
                    i += 1;
                }
            }
            if indents.len() + extra > MAX_DEPTH {
                return Some(TooDeep {
                    line: l + 1,
                    column: i + 1,
                });
            }
        }
        let mut prev = b' ';
        while i < bytes.len() {
            let b = bytes[i];
            match quote {
                Some(q) => {
                    if b == q {
                        quote = None;
                    }
                }
                None => match b {
                    b'"' | b'\'' if matches!(prev, b' ' | b'[' | b'{' | b',' | b':') => {
                        quote = Some(b)
                    }
                    b'#' if prev == b' ' => break,
                    b'[' | b'{' => {
                        flow += 1;
                        if indents.len() + flow > MAX_DEPTH {
                            return Some(TooDeep {
                                line: l + 1,
                                column: line[..i].chars().count() + 1,
                            });
                        }
                    }
                    b']' | b'}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            prev = b;
            i += 1;
        }
        if quote.is_none() && flow == 0 {
            let t = line.trim_end();
            let t = t.split(" #").next().unwrap_or(t).trim_end();
            let indicator =
                t.trim_end_matches(['-', '+', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
            if (indicator.ends_with(": |") || indicator.ends_with(": >"))
                || indicator.ends_with("- |")
                || indicator.ends_with("- >")
                || indicator == "|"
                || indicator == ">"
            {
                block_scalar = Some(indent);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn ordinary_files_pass() {
        for dir in ["workloads", "policies"] {
            for e in std::fs::read_dir(dir).unwrap() {
                let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
                assert_eq!(too_deep(&text), None);
            }
        }
        let text = "a:\n  sql: |\n    SELECT [x] {\n      [[[[\n  b: [1, {c: '[[['}] # [[[\n";
        assert_eq!(too_deep(text), None);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the wall-clock bound is what is tested
    fn nested_flow_brackets_are_rejected_fast_and_located() {
        let text = format!("name: x\nstreams: {}", "[".repeat(200_000));
        let t = Instant::now();
        let e = too_deep(&text).expect("too deep");
        assert!(t.elapsed().as_millis() < 100);
        assert_eq!(e.line, 2);
        assert_eq!(e.column, 9 + MAX_DEPTH);
        assert!(too_deep(&format!("a: {}1{}", "[".repeat(60), "]".repeat(60))).is_none());
    }

    #[test]
    fn deep_indentation_and_sequence_markers_are_rejected() {
        let mut text = String::new();
        for d in 0..100 {
            text.push_str(&format!("{}k{d}:\n", " ".repeat(d)));
        }
        assert_eq!(too_deep(&text).map(|e| e.line), Some(MAX_DEPTH + 1));
        let dashes = format!("a: 1\nb:\n{}x\n", "- ".repeat(100));
        assert_eq!(too_deep(&dashes).map(|e| e.line), Some(3));
    }
}
