//! Block traces, read a record at a time so a trace of any length needs no memory:
//! MSR Cambridge CSV and blkparse's default text output.
//!
//! Input, as the scenario is: scenario validation reads a trace through it once, and
//! both the host's replay ([`crate::host`]) and the cache tier ([`crate::tier`]) stream
//! it, so it belongs to no one component and imports none.

use std::io::BufRead;

/// One traced request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// When it was issued, relative to the trace's first record.
    pub time_ns: u64,
    /// Byte offset on the traced device.
    pub offset_bytes: u64,
    /// Length in bytes as traced (a replay rounds it up to whole 512-byte sectors and
    /// fits it into the array).
    pub len_bytes: u64,
    /// Direction.
    pub write: bool,
}

/// Which text format a trace is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, timestamps in
    /// Windows filetime ticks of 100 ns.
    Msr,
    /// blkparse's default output; `Q` (queued) events are the requests, in 512 B sectors.
    Blkparse,
}

impl std::str::FromStr for Format {
    type Err = TraceError;
    fn from_str(s: &str) -> Result<Self, TraceError> {
        match s {
            "msr" => Ok(Format::Msr),
            "blkparse" => Ok(Format::Blkparse),
            other => Err(TraceError {
                line: 0,
                message: format!("trace format must be msr or blkparse, got {other:?}"),
            }),
        }
    }
}

/// A trace line that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line number (0: not about a line).
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "trace: {}", self.message)
        } else {
            write!(f, "trace line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

/// Streams records out of a trace.
pub struct Reader<R: BufRead> {
    input: R,
    format: Format,
    line: String,
    line_number: u64,
    first_time: Option<u64>,
    /// The previous record's trace time and line: a replay issues requests in trace
    /// order at trace times, so time running backwards is refused, not reordered.
    last_time: Option<(u64, u64)>,
}

/// The end of the largest device a trace can address: offsets are `loff_t`, a signed
/// 64-bit byte count (Linux `include/linux/types.h`), so no request reaches past 2^63.
pub const DEVICE_BYTES_MAX: u64 = 1 << 63;

impl<R: BufRead> Reader<R> {
    /// A reader of `input` in `format`.
    pub fn new(input: R, format: Format) -> Self {
        Self {
            input,
            format,
            line: String::new(),
            line_number: 0,
            first_time: None,
            last_time: None,
        }
    }

    /// The next request, `None` at the end.
    pub fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        loop {
            self.line.clear();
            let n = self
                .input
                .read_line(&mut self.line)
                .map_err(|e| TraceError {
                    line: self.line_number + 1,
                    message: e.to_string(),
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line_number += 1;
            let parsed = match self.format {
                Format::Msr => parse_msr(&self.line),
                Format::Blkparse => parse_blkparse(&self.line),
            }
            .and_then(|parsed| self.in_order_on_a_device(parsed))
            .map_err(|message| TraceError {
                line: self.line_number,
                message,
            })?;
            let Some((time_ns, offset_bytes, len_bytes, write)) = parsed else {
                continue;
            };
            let first = *self.first_time.get_or_insert(time_ns);
            return Ok(Some(Record {
                time_ns: time_ns.saturating_sub(first),
                offset_bytes,
                len_bytes,
                write,
            }));
        }
    }
}

impl<R: BufRead> Reader<R> {
    /// A record is refused when it ends past [`DEVICE_BYTES_MAX`] (a wrapped or corrupt
    /// offset, which a replay would otherwise fold silently into the array) or when its
    /// time is before the previous record's: blkparse and the MSR Cambridge files list
    /// requests in time order, so such a line is a damaged or concatenated trace, and
    /// replaying it "in order" would invent a schedule. Sort it first (e.g. `sort -t,
    /// -n -k1` for MSR CSV).
    fn in_order_on_a_device(&mut self, parsed: Option<(u64, u64, u64, bool)>) -> Parsed {
        let Some((time_ns, offset_bytes, len_bytes, _)) = parsed else {
            return Ok(parsed);
        };
        if offset_bytes
            .checked_add(len_bytes)
            .is_none_or(|end| end > DEVICE_BYTES_MAX)
        {
            return Err(format!(
                "offset {offset_bytes} + length {len_bytes} bytes ends past 2^63 bytes, \
                 the largest offset a block device has (loff_t is signed 64-bit)"
            ));
        }
        if let Some((last_ns, last_line)) = self.last_time {
            if time_ns < last_ns {
                return Err(format!(
                    "time goes backwards, {} ns before line {last_line}'s: a replay needs \
                     the trace in time order (sort it by time first)",
                    last_ns - time_ns
                ));
            }
        }
        self.last_time = Some((time_ns, self.line_number));
        Ok(parsed)
    }
}

impl Record {
    /// The record as a replay issues it on an array of `capacity_bytes`: the length
    /// rounded up to whole 512-byte sectors and capped at `len_bytes_max` (and the
    /// capacity), the offset wrapped into the capacity on a sector boundary. The
    /// simulator's replay and the cache tier's policy pass fit records alike.
    pub fn fitted(mut self, capacity_bytes: u64, len_bytes_max: u64) -> Record {
        debug_assert!(capacity_bytes >= 512 && len_bytes_max >= 512);
        self.len_bytes = self.len_bytes.div_ceil(512).max(1) * 512;
        self.len_bytes = self.len_bytes.min(capacity_bytes).min(len_bytes_max);
        let room = capacity_bytes - self.len_bytes + 1;
        self.offset_bytes = (self.offset_bytes % room) / 512 * 512;
        debug_assert!(self.offset_bytes + self.len_bytes <= capacity_bytes);
        self
    }
}

type Parsed = Result<Option<(u64, u64, u64, bool)>, String>;

fn number(field: &str, what: &str) -> Result<u64, String> {
    field
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("{what} is not a whole number: {field:?}"))
}

fn parse_msr(line: &str) -> Parsed {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let f: Vec<&str> = line.split(',').collect();
    if f.len() < 6 {
        return Err(format!(
            "expected Timestamp,Hostname,DiskNumber,Type,Offset,Size[,ResponseTime], got {} fields",
            f.len()
        ));
    }
    if f[0].trim().eq_ignore_ascii_case("timestamp") {
        return Ok(None); // a header line
    }
    let ticks = number(f[0], "Timestamp")?;
    let write = match f[3].trim().to_ascii_lowercase().as_str() {
        "read" => false,
        "write" => true,
        _ => return Err(format!("Type must be Read or Write, got {:?}", f[3].trim())),
    };
    let offset = number(f[4], "Offset")?;
    let size = number(f[5], "Size")?;
    if size == 0 {
        return Ok(None);
    }
    Ok(Some((ticks.saturating_mul(100), offset, size, write)))
}

fn parse_blkparse(line: &str) -> Parsed {
    // dev cpu seq time pid action rwbs sector + count [process]
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 10 || f[5] != "Q" || f[8] != "+" {
        return Ok(None); // other events, summaries and blank lines
    }
    let rwbs = f[6];
    let write = if rwbs.contains('W') {
        true
    } else if rwbs.contains('R') {
        false
    } else {
        return Ok(None); // flushes, discards
    };
    let seconds: f64 = f[3]
        .parse()
        .map_err(|_| format!("time is not a number of seconds: {:?}", f[3]))?;
    if !(seconds.is_finite() && seconds >= 0.0) {
        return Err(format!(
            "time must be a non-negative number of seconds, got {:?}",
            f[3]
        ));
    }
    let sector = number(f[7], "sector")?;
    let sectors = number(f[9], "sector count")?;
    if sectors == 0 {
        return Ok(None);
    }
    // Sectors of 512 B past 2^55 would wrap in bytes; the reader refuses them by name.
    let past = |what: &str, n: u64| format!("{what} {n} is past 2^63 bytes in 512 B sectors");
    let offset = sector
        .checked_mul(512)
        .ok_or_else(|| past("sector", sector))?;
    let len = sectors
        .checked_mul(512)
        .ok_or_else(|| past("sector count", sectors))?;
    Ok(Some(((seconds * 1e9).round() as u64, offset, len, write)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msr_lines_become_records_relative_to_the_first() {
        let text = "128166372003061629,usr,0,Read,10737418240,4096,1331\n\
                    128166372013061629,usr,0,Write,4096,65536,200\n";
        let mut r = Reader::new(text.as_bytes(), Format::Msr);
        assert_eq!(
            r.next_record().unwrap(),
            Some(Record {
                time_ns: 0,
                offset_bytes: 10737418240,
                len_bytes: 4096,
                write: false
            })
        );
        let second = r.next_record().unwrap().unwrap();
        assert_eq!(second.time_ns, 1_000_000_000);
        assert!(second.write);
        assert_eq!(r.next_record().unwrap(), None);
    }

    #[test]
    fn blkparse_queue_events_are_the_requests() {
        let text = "  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n\
                    8,0    3        2     0.000001000   697  G   W 223490 + 8 [kjournald]\n\
                    8,0    1        3     0.500000000   100  Q   R 1000 + 16 [fio]\n\
                    CPU0 (8,0):\n";
        let mut r = Reader::new(text.as_bytes(), Format::Blkparse);
        let a = r.next_record().unwrap().unwrap();
        assert_eq!(
            (a.offset_bytes, a.len_bytes, a.write),
            (223490 * 512, 4096, true)
        );
        let b = r.next_record().unwrap().unwrap();
        assert_eq!(
            (b.time_ns, b.len_bytes, b.write),
            (500_000_000, 8192, false)
        );
        assert_eq!(r.next_record().unwrap(), None);
    }

    #[test]
    fn a_malformed_line_names_its_number() {
        let text = "1,h,0,Read,0,4096,1\n2,h,0,Sideways,0,4096,1\n";
        let mut r = Reader::new(text.as_bytes(), Format::Msr);
        r.next_record().unwrap();
        let err = r.next_record().unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("Sideways"));
    }

    #[test]
    fn an_offset_past_2_63_bytes_is_refused_with_its_line() {
        let text = "1,h,0,Read,0,4096,1\n2,h,0,Read,9223372036854775807,4096,1\n";
        let mut r = Reader::new(text.as_bytes(), Format::Msr);
        r.next_record().unwrap();
        let err = r.next_record().unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("2^63"), "{}", err.message);
        let text = "8,0 0 1 0.1 1 Q R 36028797018963968 + 8 [fio]\n";
        let err = Reader::new(text.as_bytes(), Format::Blkparse)
            .next_record()
            .unwrap_err();
        assert!(err.line == 1 && err.message.contains("2^63"), "{err}");
        let text = "8,0 0 1 0.1 1 Q R 18014398509481983 + 8 [fio]\n";
        let err = Reader::new(text.as_bytes(), Format::Blkparse)
            .next_record()
            .unwrap_err();
        assert!(err.message.contains("2^63"), "{err}");
    }

    #[test]
    fn time_going_backwards_is_refused_with_its_line() {
        let text = "30,h,0,Read,0,4096,1\n30,h,0,Read,0,4096,1\n20,h,0,Read,0,4096,1\n";
        let mut r = Reader::new(text.as_bytes(), Format::Msr);
        r.next_record().unwrap();
        r.next_record().unwrap(); // the same time twice is in order
        let err = r.next_record().unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("backwards") && err.message.contains("line 2"));
        let text = "8,0 0 1 0.5 1 Q R 0 + 8 [fio]\n8,0 0 2 0.25 1 Q W 8 + 8 [fio]\n";
        let mut r = Reader::new(text.as_bytes(), Format::Blkparse);
        r.next_record().unwrap();
        assert_eq!(r.next_record().unwrap_err().line, 2);
    }
}
