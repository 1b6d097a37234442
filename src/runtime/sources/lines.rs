//! Splitting a byte stream into lines with a length limit: bytes are read into one reused
//! buffer and lines are handed out as borrowed slices. Invariant: every line is reported
//! exactly once, as a line or as too long, and the buffer never grows past
//! `max_line + READ_CHUNK` bytes, however long a line is.

use memchr::memchr;

/// Bytes asked of the socket or file per read.
pub const READ_CHUNK: usize = 64 * 1024;

/// One line out of the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A complete line, without its `\n` (or `\r\n`).
    Text(&'a [u8]),
    /// A line longer than the limit: counted once, its bytes skipped up to its newline.
    TooLong,
}

/// The line splitter of one connection or file.
pub struct LineBuffer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Where to resume the newline search (bytes before it hold none).
    scanned: usize,
    max_line: usize,
    /// Inside a too-long line that was already reported: drop bytes up to its newline.
    skipping: bool,
    /// Lines seen so far, reported or skipped (1-based number of the last one).
    pub line_no: u64,
}

impl LineBuffer {
    pub fn new(max_line: usize) -> LineBuffer {
        LineBuffer {
            buf: vec![0; max_line + 2 + READ_CHUNK],
            start: 0,
            end: 0,
            scanned: 0,
            max_line,
            skipping: false,
            line_no: 0,
        }
    }

    /// Room to read into; pass how much was read to `filled`.
    pub fn space(&mut self) -> &mut [u8] {
        if self.start > 0 && self.buf.len() - self.end < READ_CHUNK {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// The next complete line and its number (from 1), if the buffer holds one.
    pub fn next_line(&mut self) -> Option<(u64, Line<'_>)> {
        loop {
            match memchr(b'\n', &self.buf[self.scanned..self.end]) {
                Some(i) => {
                    let nl = self.scanned + i;
                    let (from, skipped) = (self.start, self.skipping);
                    self.start = nl + 1;
                    self.scanned = self.start;
                    self.skipping = false;
                    if skipped {
                        continue;
                    }
                    self.line_no += 1;
                    let mut line = &self.buf[from..nl];
                    if let [rest @ .., b'\r'] = line {
                        line = rest;
                    }
                    let line = if line.len() > self.max_line {
                        Line::TooLong
                    } else {
                        Line::Text(line)
                    };
                    return Some((self.line_no, line));
                }
                None => {
                    self.scanned = self.end;
                    if self.skipping {
                        // Still inside a reported line: forget its bytes.
                        self.start = self.end;
                        self.scanned = self.end;
                    } else if self.end - self.start > self.max_line + 1 {
                        self.line_no += 1;
                        self.skipping = true;
                        self.start = self.end;
                        self.scanned = self.end;
                        return Some((self.line_no, Line::TooLong));
                    }
                    return None;
                }
            }
        }
    }

    /// At the end of input: whether an unterminated line was left (and counts it).
    pub fn finish(&mut self) -> bool {
        let partial = !self.skipping && self.end > self.start;
        if partial {
            self.line_no += 1;
        }
        self.start = self.end;
        self.scanned = self.end;
        self.skipping = false;
        partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(b: &mut LineBuffer, bytes: &[u8]) -> Vec<Result<Vec<u8>, ()>> {
        let mut out = Vec::new();
        for chunk in bytes.chunks(7) {
            b.space()[..chunk.len()].copy_from_slice(chunk);
            b.filled(chunk.len());
            while let Some((_, l)) = b.next_line() {
                out.push(match l {
                    Line::Text(t) => Ok(t.to_vec()),
                    Line::TooLong => Err(()),
                });
            }
        }
        out
    }

    #[test]
    fn lines_split_at_newlines_in_any_chunking_and_long_lines_count_once() {
        let mut b = LineBuffer::new(16);
        let long = "x".repeat(100);
        let text = format!("a\r\nbb\n{long}\nccc\n{}\nd\nunterminated", "y".repeat(17));
        let got = feed(&mut b, text.as_bytes());
        assert_eq!(
            got,
            vec![
                Ok(b"a".to_vec()),
                Ok(b"bb".to_vec()),
                Err(()),
                Ok(b"ccc".to_vec()),
                Err(()),
                Ok(b"d".to_vec()),
            ]
        );
        assert_eq!(b.line_no, 6);
        assert!(b.finish());
        assert_eq!(b.line_no, 7);
        assert!(!b.finish());
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_accepted() {
        let mut b = LineBuffer::new(16);
        let line = "z".repeat(16);
        let got = feed(&mut b, format!("{line}\r\n{line}\n").as_bytes());
        assert_eq!(
            got,
            vec![Ok(line.clone().into_bytes()), Ok(line.into_bytes())]
        );
    }
}
