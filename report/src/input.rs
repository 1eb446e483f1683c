//! Reading `port-stats.csv`: one reused byte record, fields borrowed, so memory does not grow
//! with the file (the study's was 30 M records, 2 GB).

use std::io::Read;

use crate::analysis::{Analyzer, Record};
use crate::ReportError;

/// The columns, in order.
pub const HEADER: [&str; 7] = [
    "cycle",
    "switch",
    "port",
    "role",
    "direction",
    "xmit_wait_cycles",
    "xmit_data_phits",
];

/// The optional eighth column: frames the port dropped (a live, lossy fabric's sampler writes
/// it; the simulator is lossless and does not).
pub const DISCARDS: &str = "xmit_discards";

/// Feeds every record of `reader` (header first) to `analyzer`.
pub fn read_into<R: Read>(reader: R, analyzer: &mut Analyzer) -> Result<(), ReportError> {
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(true)
        .buffer_capacity(1 << 20)
        .from_reader(reader);
    let header = csv
        .byte_headers()
        .map_err(|source| ReportError::Csv { line: 1, source })?;
    let found: Vec<&[u8]> = header.iter().collect();
    let expected: Vec<&[u8]> = HEADER.iter().map(|h| h.as_bytes()).collect();
    let width = if found == expected {
        HEADER.len()
    } else if found.split_last() == Some((&DISCARDS.as_bytes(), expected.as_slice())) {
        HEADER.len() + 1
    } else {
        return Err(ReportError::Header {
            expected: format!("{}[,{DISCARDS}]", HEADER.join(",")),
            found: String::from_utf8_lossy(header.as_slice()).into_owned(),
        });
    };
    let mut rec = csv::ByteRecord::new();
    let mut line = 1u64;
    loop {
        line += 1;
        match csv.read_byte_record(&mut rec) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(source) => return Err(ReportError::Csv { line, source }),
        }
        let r = parse(&rec, line, width)?;
        analyzer.push(&r, line)?;
    }
}

fn parse(rec: &csv::ByteRecord, line: u64, width: usize) -> Result<Record<'_>, ReportError> {
    let [cycle, switch, port, role, direction, wait, data] =
        [0, 1, 2, 3, 4, 5, 6].map(|i| rec.get(i));
    let (
        Some(cycle),
        Some(switch),
        Some(port),
        Some(role),
        Some(direction),
        Some(wait),
        Some(data),
    ) = (cycle, switch, port, role, direction, wait, data)
    else {
        return Err(ReportError::Width {
            line,
            found: rec.len(),
            expected: width,
        });
    };
    if rec.len() != width {
        return Err(ReportError::Width {
            line,
            found: rec.len(),
            expected: width,
        });
    }
    fn text<'a>(field: &'static str, v: &'a [u8], line: u64) -> Result<&'a str, ReportError> {
        std::str::from_utf8(v).map_err(|_| ReportError::Field {
            line,
            field,
            value: String::from_utf8_lossy(v).into_owned(),
            what: "UTF-8 text",
        })
    }
    let port = number("port", port, line)?;
    Ok(Record {
        cycle: number("cycle", cycle, line)?,
        switch: text("switch", switch, line)?,
        port: u32::try_from(port).map_err(|_| ReportError::Field {
            line,
            field: "port",
            value: port.to_string(),
            what: "32-bit port number",
        })?,
        role: text("role", role, line)?,
        direction: text("direction", direction, line)?,
        xmit_wait_cycles: number("xmit_wait_cycles", wait, line)?,
        xmit_data_phits: number("xmit_data_phits", data, line)?,
        xmit_discards: match rec.get(HEADER.len()) {
            Some(v) => number(DISCARDS, v, line)?,
            None => 0,
        },
    })
}

/// A decimal `u64` (the hot path: no UTF-8 check, no allocation).
fn number(field: &'static str, v: &[u8], line: u64) -> Result<u64, ReportError> {
    let bad = || ReportError::Field {
        line,
        field,
        value: String::from_utf8_lossy(v).into_owned(),
        what: "non-negative integer",
    };
    if v.is_empty() {
        return Err(bad());
    }
    v.iter()
        .try_fold(0u64, |n, &b| {
            if b.is_ascii_digit() {
                n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
            } else {
                None
            }
        })
        .ok_or_else(bad)
}
