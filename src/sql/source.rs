//! The query text: turns sqlparser's line/column spans into byte ranges, widens the spans
//! sqlparser leaves short (parentheses, unary operators, function calls, intervals), and
//! builds every `SqlError`, so each error quotes exactly the text its position points at.

use std::ops::Range;

use sqlparser::ast::{self, Spanned};
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Location, Span};

use super::SqlError;

pub(super) struct Source<'a> {
    text: &'a str,
    /// Byte offset at which each line starts; line `n` (1-based) starts at `lines[n - 1]`.
    lines: Vec<usize>,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl<'a> Source<'a> {
    pub fn new(text: &'a str) -> Source<'a> {
        let mut lines = vec![0];
        lines.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source { text, lines }
    }

    /// Byte offset of a sqlparser location (1-based line, column counted in chars).
    fn offset(&self, loc: Location) -> Option<usize> {
        if loc.line == 0 || loc.column == 0 {
            return None;
        }
        let start = *self.lines.get(loc.line as usize - 1)?;
        let end = self.lines.get(loc.line as usize).copied();
        let line = &self.text[start..end.unwrap_or(self.text.len())];
        line.char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(line.len()))
            .nth(loc.column as usize - 1)
            .map(|i| start + i)
    }

    /// The byte range of a span, `None` for the empty spans sqlparser gives some nodes.
    pub fn range(&self, span: Span) -> Option<Range<usize>> {
        let (start, end) = (self.offset(span.start)?, self.offset(span.end)?);
        (start <= end).then_some(start..end)
    }

    /// 1-based line and column (in chars) of a byte offset.
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = self.lines.partition_point(|&s| s <= offset).max(1);
        let start = self.lines[line - 1];
        (line, self.text[start..offset].chars().count() + 1)
    }

    /// An error about the text at `at`.
    pub fn error(&self, message: impl Into<String>, at: Range<usize>) -> SqlError {
        let (line, column) = self.line_col(at.start);
        SqlError {
            message: message.into(),
            snippet: self.text[at].to_string(),
            line,
            column,
        }
    }

    /// An error about an expression; falls back to its printed form when it has no span.
    pub fn expr_error(&self, message: impl Into<String>, e: &ast::Expr) -> SqlError {
        match self.expr_range(e) {
            Some(r) => self.error(message, r),
            None => self.shown_error(message, &e.to_string()),
        }
    }

    /// An error quoting `shown`, placed at its first occurrence in the text if there is one.
    pub fn shown_error(&self, message: impl Into<String>, shown: &str) -> SqlError {
        let start = self.text.find(shown).unwrap_or(0);
        let (line, column) = self.line_col(start);
        SqlError {
            message: message.into(),
            snippet: shown.to_string(),
            line,
            column,
        }
    }

    /// The text of an expression, as the user wrote it.
    pub fn expr_text(&self, e: &ast::Expr) -> String {
        match self.expr_range(e) {
            Some(r) => self.text[r].to_string(),
            None => e.to_string(),
        }
    }

    /// The full source range of an expression. sqlparser's spans omit enclosing
    /// parentheses, unary operators, closing parentheses of calls and INTERVAL keywords.
    pub fn expr_range(&self, e: &ast::Expr) -> Option<Range<usize>> {
        use ast::Expr as E;
        let union = |a: Option<Range<usize>>, b: Option<Range<usize>>| match (a, b) {
            (Some(a), Some(b)) => Some(a.start.min(b.start)..a.end.max(b.end)),
            (a, b) => a.or(b),
        };
        match e {
            E::Nested(inner) => Some(self.parenthesized(self.expr_range(inner)?)),
            E::UnaryOp { expr, .. } => {
                let r = self.expr_range(expr)?;
                let before = self.ws_back(r.start);
                let head = &self.text[..before];
                if head.ends_with(['-', '+', '!', '~']) {
                    Some(before - 1..r.end)
                } else {
                    let w = self.word_before(before);
                    let not = self.text[w.clone()].eq_ignore_ascii_case("not");
                    Some(if not { w.start } else { r.start }..r.end)
                }
            }
            E::BinaryOp { left, right, .. } => union(self.expr_range(left), self.expr_range(right)),
            E::Between {
                expr, low, high, ..
            } => union(
                self.expr_range(expr),
                union(self.expr_range(low), self.expr_range(high)),
            ),
            E::In { expr, target, .. } => {
                let target = match target {
                    ast::InTarget::Subquery(q) => self.range(q.span()),
                    ast::InTarget::Unnest(x) => self.expr_range(x),
                    ast::InTarget::List(l) => l.last().and_then(|x| self.expr_range(x)),
                    ast::InTarget::Table { name, .. } => self.range(name.span()),
                };
                let r = union(self.expr_range(expr), target)?;
                let close = self.ws_fwd(r.end);
                let closed = self.text[close..].starts_with(')');
                Some(r.start..if closed { close + 1 } else { r.end })
            }
            E::Function(f) => {
                let name = self.range(f.name.span())?;
                Some(name.start..self.close_paren(name.end).unwrap_or(name.end))
            }
            E::Interval(iv) => {
                let r = self.expr_range(&iv.value)?;
                let kw = self.word_before(self.ws_back(r.start));
                let start = if self.text[kw.clone()].eq_ignore_ascii_case("interval") {
                    kw.start
                } else {
                    r.start
                };
                let unit = self.word_after(self.ws_fwd(r.end));
                let end = if iv.leading_field.is_some() && !unit.is_empty() {
                    unit.end
                } else {
                    r.end
                };
                Some(start..end)
            }
            other => self.range(other.span()),
        }
    }

    /// `r` widened to the parentheses directly around it, if there are any.
    pub fn parenthesized(&self, r: Range<usize>) -> Range<usize> {
        let open = self.ws_back(r.start);
        let close = self.ws_fwd(r.end);
        let opened = self.text[..open].ends_with('(');
        let closed = self.text[close..].starts_with(')');
        if opened && closed {
            open - 1..close + 1
        } else {
            r
        }
    }

    /// The offset after the whitespace that ends just before `pos`.
    fn ws_back(&self, pos: usize) -> usize {
        self.text[..pos].trim_end().len()
    }

    /// The offset after the whitespace that starts at `pos`.
    fn ws_fwd(&self, pos: usize) -> usize {
        pos + (self.text[pos..].len() - self.text[pos..].trim_start().len())
    }

    /// The word (letters, digits, `_`) ending exactly at `pos`; empty if there is none.
    fn word_before(&self, pos: usize) -> Range<usize> {
        let head = &self.text[..pos];
        head.trim_end_matches(is_word).len()..pos
    }

    /// The word starting exactly at `pos`; empty if there is none.
    fn word_after(&self, pos: usize) -> Range<usize> {
        let tail = &self.text[pos..];
        pos..pos + (tail.len() - tail.trim_start_matches(is_word).len())
    }

    /// The offset just after the parenthesis closing the one that opens at or after `pos`.
    fn close_paren(&self, pos: usize) -> Option<usize> {
        let open = self.ws_fwd(pos);
        if !self.text[open..].starts_with('(') {
            return None;
        }
        let (mut depth, mut quote) = (0usize, None);
        for (i, c) in self.text[open..].char_indices() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(open + i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The last occurrence of the keyword `kw` (a whole word, any case) ending before `pos`.
    pub fn keyword_before(&self, pos: usize, kw: &str) -> Option<Range<usize>> {
        let lower = self.text[..pos].to_ascii_lowercase();
        let kw = kw.to_ascii_lowercase();
        let mut end = lower.len();
        while let Some(at) = lower[..end].rfind(&kw) {
            let r = at..at + kw.len();
            if self.is_whole_word(r.clone()) {
                return Some(r);
            }
            end = at;
        }
        None
    }

    /// The first occurrence of the keyword `kw` (a whole word, any case) at or after `pos`.
    pub fn keyword_after(&self, pos: usize, kw: &str) -> Option<Range<usize>> {
        let lower = self.text.to_ascii_lowercase();
        let kw = kw.to_ascii_lowercase();
        let mut from = pos;
        while let Some(at) = lower[from..].find(&kw) {
            let r = from + at..from + at + kw.len();
            if self.is_whole_word(r.clone()) {
                return Some(r);
            }
            from = r.end;
        }
        None
    }

    fn is_whole_word(&self, r: Range<usize>) -> bool {
        !self.text[..r.start].ends_with(is_word) && !self.text[r.end..].starts_with(is_word)
    }

    /// The first word of the query (used when a statement has no span).
    pub fn first_word(&self) -> Range<usize> {
        self.word_after(self.ws_fwd(0))
    }

    /// A `syntax error` from a sqlparser error, placed where sqlparser says it is or, for
    /// an unexpected end of input, at the last word of the query.
    pub fn parse_error(&self, e: &ParserError) -> SqlError {
        let raw = match e {
            ParserError::TokenizerError(s) | ParserError::ParserError(s) => s.clone(),
            ParserError::RecursionLimitExceeded => "query nested too deeply".to_string(),
        };
        let (what, at) = match raw.rfind(" at Line: ") {
            Some(i) => (&raw[..i], parse_location(&raw[i..])),
            None => (raw.as_str(), None),
        };
        let what = what
            .replace("Expected: ", "expected ")
            .replace(", found: ", ", found ");
        let message = format!("syntax error: {}", lowercase_first(&what));
        let at = at.and_then(|loc| self.offset(loc));
        if matches!(e, ParserError::RecursionLimitExceeded) {
            return self.error(message, self.first_word());
        }
        let range = match at {
            Some(start) => {
                let word = self.word_after(start);
                let tail = &self.text[start..];
                match tail.chars().next() {
                    _ if !word.is_empty() => word,
                    Some(q @ ('\'' | '"')) => {
                        let end = tail[1..].find(q).map_or(tail.len(), |i| i + 2);
                        start..start + end
                    }
                    Some(c) => start..start + c.len_utf8(),
                    None => start..start,
                }
            }
            None => {
                let end = self.ws_back(self.text.len());
                let word = self.word_before(end);
                if word.is_empty() {
                    let len = self.text[..end]
                        .chars()
                        .next_back()
                        .map_or(0, char::len_utf8);
                    end - len..end
                } else {
                    word
                }
            }
        };
        self.error(message, range)
    }
}

/// Reads `Line: L, Column: C` out of a sqlparser message tail.
fn parse_location(tail: &str) -> Option<Location> {
    let rest = tail.split("Line: ").nth(1)?;
    let (line, rest) = rest.split_once(", Column: ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some(Location {
        line: line.trim().parse().ok()?,
        column: column.parse().ok()?,
    })
}

fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}
