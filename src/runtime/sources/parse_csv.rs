//! CSV lines: one record per line, fields in schema order, parsed by `csv_core` (the csv
//! crate's allocation-free core: quoting and escapes handled, output into buffers this
//! record reuses). A record never spans lines.

use csv_core::{ReadRecordResult, Reader};

use super::parse::{Interner, LineError, push_text};
use crate::core::batch::Column;
use crate::core::schema::DataType;

/// The reusable state of CSV parsing: the reader and its output buffers.
pub struct CsvRecord {
    reader: Reader,
    out: Vec<u8>,
    ends: Vec<usize>,
}

impl CsvRecord {
    pub fn new(fields: usize) -> CsvRecord {
        CsvRecord {
            reader: Reader::new(),
            out: vec![0; 1024],
            // One more than needed, to tell "too many fields" from "just right".
            ends: vec![0; fields + 1],
        }
    }

    /// Parses `line` as one record into `columns`: CSV column `j` holds field `order[j]`,
    /// of type `types[order[j]]`.
    pub fn row(
        &mut self,
        types: &[DataType],
        order: &[usize],
        strings: &mut Interner,
        line: &[u8],
        columns: &mut [Column],
    ) -> Result<(), LineError> {
        let want = types.len();
        if self.out.len() < line.len() {
            self.out.resize(line.len(), 0);
        }
        self.reader.reset();
        let (mut nin, mut nout, mut nends) = (0, 0, 0);
        loop {
            let (r, i, o, e) = self.reader.read_record(
                &line[nin..],
                &mut self.out[nout..],
                &mut self.ends[nends..],
            );
            nin += i;
            nout += o;
            nends += e;
            match r {
                // The whole line is in; an empty input tells the reader it ended.
                ReadRecordResult::InputEmpty if nin == line.len() => {
                    let (r, _, o, e) = self.reader.read_record(
                        &[],
                        &mut self.out[nout..],
                        &mut self.ends[nends..],
                    );
                    nout += o;
                    nends += e;
                    match r {
                        ReadRecordResult::Record => break,
                        ReadRecordResult::OutputEndsFull => {
                            return Err(LineError::FieldCount {
                                got: want + 1,
                                want,
                            });
                        }
                        _ => return Err(LineError::FieldCount { got: nends, want }),
                    }
                }
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::Record | ReadRecordResult::End => break,
                ReadRecordResult::OutputFull => {
                    let len = self.out.len() * 2;
                    self.out.resize(len, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    return Err(LineError::FieldCount {
                        got: want + 1,
                        want,
                    });
                }
            }
        }
        let _ = nout;
        if nends != want {
            return Err(LineError::FieldCount { got: nends, want });
        }
        let mut start = 0;
        for (&i, &end) in order.iter().zip(&self.ends[..want]) {
            let text = std::str::from_utf8(&self.out[start..end])
                .map_err(|e| LineError::Utf8(start + e.valid_up_to()))?;
            if !push_text(types[i], strings, text, &mut columns[i]) {
                return Err(LineError::Value {
                    field: i,
                    ty: types[i],
                });
            }
            start = end;
        }
        Ok(())
    }
}
