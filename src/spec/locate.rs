//! Finds where a setting is written: maps a dotted path such as `streams.s.rate.steps[1].at`
//! to a 1-based line and column of the YAML text, because a parsed `Value` has no spans.
//! It reads block mappings and sequences by indentation and flow collections (`{a: 1}`,
//! `[1, 2]`) on one line; whatever it cannot follow falls back to the nearest ancestor it
//! found, and the answer is always a valid position (at worst 1:1).

#[derive(Clone, Debug, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Splits `a.b[2].c` into `a`, `b`, `[2]`, `c`.
fn segments(path: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Segment::Key(key.to_string()));
        }
        while let Some(end) = rest.find(']') {
            match rest[1..end].parse() {
                Ok(i) => out.push(Segment::Index(i)),
                Err(_) => return out,
            }
            rest = &rest[end + 1..];
        }
    }
    out
}

/// A located YAML node: the line and byte column where its key (or list dash, or flow
/// element) starts, and where its value starts on that line if it is written inline.
#[derive(Clone, Copy, Debug)]
struct Node {
    line: usize,
    col: usize,
    /// Lines indented deeper than this belong to the node's block value.
    indent: isize,
    value: Option<usize>,
    /// A block sequence item (`- ...`), whose inline value may open a block mapping.
    item: bool,
    root: bool,
}

/// The 1-based line and column of `path` in `text`, or of its nearest located ancestor.
pub(crate) fn locate(text: &str, path: &str) -> (usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let (node, _) = find(&lines, path);
    position(&lines, node.line, node.col)
}

/// The position in `text` of line `line`, column `col` (both 1-based) of the SQL text of
/// the query setting at `sql_path` (a plain, quoted or block scalar).
pub(crate) fn sql_position(text: &str, sql_path: &str, line: usize, col: usize) -> (usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let (node, complete) = find(&lines, sql_path);
    let (Some(v), true) = (node.value, complete) else {
        return position(&lines, node.line, node.col);
    };
    let first = &lines[node.line][v..];
    let line = line.max(1);
    let col = col.max(1);
    if first.starts_with('|') || first.starts_with('>') {
        // Block scalar: SQL line k is file line `node.line + k`, after the indentation of
        // the block's content (that of its first non-blank line).
        let indent = lines[node.line + 1..]
            .iter()
            .find(|l| !l.trim().is_empty())
            .map_or(0, |l| l.len() - l.trim_start().len());
        let l = (node.line + line).min(lines.len().saturating_sub(1));
        return (l + 1, char_col(lines[l], indent) + col);
    }
    let quote = usize::from(first.starts_with('"') || first.starts_with('\''));
    if line == 1 {
        let (l, c) = position(&lines, node.line, v + quote);
        return (l, c + col - 1);
    }
    // A plain or quoted scalar over several lines: continuation lines keep their text.
    let l = (node.line + line - 1).min(lines.len().saturating_sub(1));
    let indent = lines[l].len() - lines[l].trim_start().len();
    (l + 1, char_col(lines[l], indent) + col)
}

/// Follows `path` as far as it can; also says whether every segment was found.
fn find(lines: &[&str], path: &str) -> (Node, bool) {
    let mut node = Node {
        line: 0,
        col: 0,
        indent: -1,
        value: None,
        item: false,
        root: true,
    };
    for seg in segments(path) {
        match child(lines, node, &seg) {
            Some(n) => node = n,
            None => return (node, false),
        }
    }
    (node, true)
}

fn position(lines: &[&str], line: usize, col: usize) -> (usize, usize) {
    match lines.get(line) {
        Some(l) => (line + 1, char_col(l, col) + 1),
        None => (1, 1),
    }
}

/// 0-based character column of byte column `col` of `line`.
fn char_col(line: &str, col: usize) -> usize {
    let col = col.min(line.len());
    line.char_indices().take_while(|(i, _)| *i < col).count()
}

fn child(lines: &[&str], node: Node, seg: &Segment) -> Option<Node> {
    let Some(v) = node.value else {
        let start = if node.root { 0 } else { node.line + 1 };
        return block_child(lines, start, node.indent, None, seg);
    };
    let rest = &lines[node.line][v..];
    if rest.starts_with('{') || rest.starts_with('[') {
        return flow_child(lines[node.line], node.line, v, seg);
    }
    // `- key: value`: a block mapping whose first key shares the dash's line.
    match (node.item, seg) {
        (true, Segment::Key(k)) => match key_at(lines[node.line], v) {
            Some((key, value)) if key == *k => Some(Node {
                line: node.line,
                col: v,
                indent: v as isize,
                value,
                item: false,
                root: false,
            }),
            _ => block_child(lines, node.line + 1, v as isize - 1, Some(v), seg),
        },
        _ => None,
    }
}

/// Looks for `seg` among the lines from `start` indented deeper than `parent` (exactly at
/// `fixed` if given).
fn block_child(
    lines: &[&str],
    start: usize,
    parent: isize,
    fixed: Option<usize>,
    seg: &Segment,
) -> Option<Node> {
    let mut indent = fixed;
    let mut items = 0;
    for (l, line) in lines.iter().enumerate().skip(start) {
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') || line.starts_with("---") {
            continue;
        }
        let ind = line.len() - body.len();
        let dash = body == "-" || body.starts_with("- ");
        // A block sequence may sit at the indentation of its parent key.
        let same_level_seq = dash && ind as isize == parent && fixed.is_none();
        if ind as isize <= parent && !(same_level_seq && matches!(seg, Segment::Index(_))) {
            return None;
        }
        if ind != *indent.get_or_insert(ind) {
            continue;
        }
        match seg {
            Segment::Key(k) if !dash => {
                if let Some((key, value)) = key_at(line, ind)
                    && key == *k
                {
                    return Some(Node {
                        line: l,
                        col: ind,
                        indent: ind as isize,
                        value,
                        item: false,
                        root: false,
                    });
                }
            }
            Segment::Index(i) if dash => {
                if items == *i {
                    let content = ind + 1 + body[1..].len() - body[1..].trim_start().len();
                    let value = (content < line.len() && !line[content..].starts_with('#'))
                        .then_some(content);
                    return Some(Node {
                        line: l,
                        col: ind,
                        indent: ind as isize,
                        value,
                        item: true,
                        root: false,
                    });
                }
                items += 1;
            }
            _ => {}
        }
    }
    None
}

/// The key of a `key: value` line starting at byte `col`, and where its inline value
/// starts (`None` if the value is on the following lines).
fn key_at(line: &str, col: usize) -> Option<(String, Option<usize>)> {
    let body = &line[col..];
    let (key, after) = if let Some(q @ ('"' | '\'')) = body.chars().next() {
        let end = body[1..].find(q)? + 1;
        (body[1..end].to_string(), end + 1)
    } else {
        let colon = body
            .char_indices()
            .find(|&(i, c)| {
                c == ':'
                    && body[i + 1..]
                        .chars()
                        .next()
                        .is_none_or(|n| n == ' ' || n == '\t')
            })?
            .0;
        (body[..colon].trim_end().to_string(), colon)
    };
    let rest = body[after..].strip_prefix(':')?;
    let value = col + body.len() - rest.trim_start().len();
    let inline = value < line.len() && !line[value..].starts_with('#');
    Some((key, inline.then_some(value)))
}

/// Looks for `seg` in the flow collection opening at byte `open` of `text`.
fn flow_child(text: &str, line: usize, open: usize, seg: &Segment) -> Option<Node> {
    let bytes = text.as_bytes();
    let is_map = bytes[open] == b'{';
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut index = 0;
    let mut start = None;
    let mut key_done = false;
    let found = |col: usize, value: usize| {
        let v = value + text[value..].len() - text[value..].trim_start().len();
        let inline = v < text.len() && !matches!(bytes[v], b',' | b'}' | b']' | b'#');
        Node {
            line,
            col,
            // Nothing on later lines belongs to a flow entry.
            indent: isize::MAX,
            value: inline.then_some(v),
            item: false,
            root: false,
        }
    };
    for (i, &b) in bytes.iter().enumerate().skip(open + 1) {
        if let Some(q) = quote {
            if b == q {
                quote = None;
            }
            continue;
        }
        if depth == 0 && start.is_none() && b != b' ' {
            start = Some(i);
            if let (Segment::Index(want), false) = (seg, is_map)
                && *want == index
                && !matches!(b, b']' | b',')
            {
                return Some(found(i, i));
            }
        }
        match b {
            b'"' | b'\'' => quote = Some(b),
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return None,
            b'}' | b']' => depth -= 1,
            b',' if depth == 0 => {
                index += 1;
                start = None;
                key_done = false;
            }
            b':' if depth == 0 && is_map && !key_done => {
                key_done = true;
                let s = start.unwrap_or(i);
                let key = text[s..i].trim().trim_matches(|c| c == '"' || c == '\'');
                if matches!(seg, Segment::Key(k) if k == key) {
                    return Some(found(s, i + 1));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
name: demo
streams:
  readings:
    schema: {sensor: int, 'temp': float}
    rate:
      steps:
        - at: 0s
          rate: 100
        - {at: 5s, rate: 200}
    fields:
      # comment
      sensor: {zipf: {n: 10, s: 1.1}}
queries:
  hot:
    sql: |
      SELECT a
        FROM readings
    qos:
      loss_tolerance: [[100, 1.0], [50, 0.7]]
  cold:
    sql: \"SELECT b FROM x\"
list:
- one
- two: 2
";

    #[test]
    fn finds_block_keys_and_items() {
        assert_eq!(locate(TEXT, "name"), (1, 1));
        assert_eq!(locate(TEXT, "streams.readings"), (3, 3));
        assert_eq!(locate(TEXT, "streams.readings.rate.steps[0]"), (7, 9));
        assert_eq!(locate(TEXT, "streams.readings.rate.steps[0].rate"), (8, 11));
        assert_eq!(locate(TEXT, "streams.readings.fields.sensor"), (12, 7));
        assert_eq!(locate(TEXT, "list[1].two"), (24, 3));
    }

    #[test]
    fn finds_flow_entries() {
        assert_eq!(locate(TEXT, "streams.readings.schema.sensor"), (4, 14));
        assert_eq!(locate(TEXT, "streams.readings.schema.temp"), (4, 27));
        assert_eq!(locate(TEXT, "streams.readings.rate.steps[1].rate"), (9, 20));
        assert_eq!(
            locate(TEXT, "streams.readings.fields.sensor.zipf.s"),
            (12, 30)
        );
        assert_eq!(
            locate(TEXT, "queries.hot.qos.loss_tolerance[1][1]"),
            (19, 41)
        );
    }

    #[test]
    fn falls_back_to_the_nearest_ancestor() {
        assert_eq!(locate(TEXT, "streams.readings.nope.deeper"), (3, 3));
        assert_eq!(locate(TEXT, "nothing"), (1, 1));
        assert_eq!(locate("", "a.b"), (1, 1));
        assert_eq!(locate(TEXT, "streams.readings.rate.steps[7]"), (6, 7));
    }

    #[test]
    fn maps_sql_positions_into_the_file() {
        assert_eq!(sql_position(TEXT, "queries.hot.sql", 1, 1), (16, 7));
        assert_eq!(sql_position(TEXT, "queries.hot.sql", 2, 3), (17, 9));
        assert_eq!(sql_position(TEXT, "queries.cold.sql", 1, 10), (21, 20));
    }
}
