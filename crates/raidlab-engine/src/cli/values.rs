//! Parsers of flag values: sizes, bounded numbers, levels, layouts, byte ranges, delays.
//!
//! Each returns what is allowed and what was given, without the flag's name: the error
//! mapping in [`super::parse`] puts the flag in front, so a message reads
//! `--size: expected a size such as 512, 4K, 1M or 32G (powers of 1024), got "lots"`
//! whichever flag it came from.

use raidlab_layout::{units, Layout, Level};
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// The longest delay `inject --latency` accepts: one minute, past any client timeout
/// worth testing.
pub const LATENCY_US_MAX: f64 = 60e6;

/// A byte range of a member's data, `OFF[+LEN]` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte, counted from the start of the member's data area.
    pub offset_bytes: u64,
    /// Length; 4 KiB (one page) when not given.
    pub len_bytes: u64,
}

/// A size in raidlab's one grammar ([`raidlab_layout::units`]): `512`, `64K`, `1.5M`,
/// `32GiB` (prefixes are powers of 1024).
pub fn bytes(s: &str) -> Result<u64, String> {
    units::parse_size(s).map_err(|e| e.message(&format!("{s:?}")))
}

/// `serve --memory-limit`: a size as [`bytes`], 1M to 1T.
pub fn memory_limit(s: &str) -> Result<u64, String> {
    let n = bytes(s)?;
    if (crate::net::nbd::server::MEMORY_LIMIT_MIN..=1 << 40).contains(&n) {
        Ok(n)
    } else {
        Err(format!("expected a size from 1M to 1T, got {s:?}"))
    }
}

/// `serve --name`: at most 4096 bytes (the protocol's string limit), no NUL.
pub fn export_name(s: &str) -> Result<String, String> {
    if s.len() > crate::net::nbd::server::EXPORT_NAME_BYTES_MAX || s.contains('\0') {
        Err(format!(
            "expected a name of at most {} bytes without NUL, got {} bytes",
            crate::net::nbd::server::EXPORT_NAME_BYTES_MAX,
            s.len()
        ))
    } else {
        Ok(s.to_string())
    }
}

/// A plain number.
pub fn number<T: FromStr>(s: &str) -> Result<T, String> {
    s.parse()
        .map_err(|_| format!("expected a number, got {s:?}"))
}

/// A parser of a number that must lie in `allowed`.
pub fn bounded<T>(
    allowed: RangeInclusive<T>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: FromStr + PartialOrd + Display + Clone + Send + Sync + 'static,
{
    move |s| {
        let v = number::<T>(s)?;
        if allowed.contains(&v) {
            Ok(v)
        } else {
            Err(format!("{}..={}, got {v}", allowed.start(), allowed.end()))
        }
    }
}

/// A RAID level as `raidlab-layout` names it (`5`, `raid6`, `concat`, ...).
pub fn level(s: &str) -> Result<Level, String> {
    s.parse()
        .map_err(|e: raidlab_layout::LayoutError| e.message)
}

/// A layout of a level (`left-symmetric`, `near2`, ...).
pub fn layout(s: &str) -> Result<Layout, String> {
    s.parse()
        .map_err(|e: raidlab_layout::LayoutError| e.message)
}

/// An array UUID: up to 32 hex digits, `0x` optional.
pub fn uuid(s: &str) -> Result<u128, String> {
    u128::from_str_radix(s.trim_start_matches("0x"), 16)
        .map_err(|_| format!("expected up to 32 hex digits, got {s:?}"))
}

/// The bits `inject` flips in a byte: a nonzero hex byte, `0x` optional.
pub fn mask(s: &str) -> Result<u8, String> {
    u8::from_str_radix(s.trim_start_matches("0x"), 16)
        .ok()
        .filter(|&m| m != 0)
        .ok_or_else(|| format!("a nonzero hex byte, got {s:?}"))
}

/// `OFF[+LEN]`: sizes as [`bytes`]; the length is 4K when not given.
pub fn byte_range(s: &str) -> Result<ByteRange, String> {
    let (off, len) = s.split_once('+').unwrap_or((s, "4K"));
    Ok(ByteRange {
        offset_bytes: bytes(off)?,
        len_bytes: bytes(len)?,
    })
}

/// A delay like `20ms` or `500us`, in microseconds, up to [`LATENCY_US_MAX`].
pub fn latency_us(s: &str) -> Result<u64, String> {
    s.strip_suffix("ms")
        .and_then(|n| n.parse::<f64>().ok())
        .map(|ms| ms * 1e3)
        .or_else(|| s.strip_suffix("us").and_then(|n| n.parse::<f64>().ok()))
        .filter(|us| us.is_finite() && *us >= 0.0 && *us <= LATENCY_US_MAX)
        .map(|us| us as u64)
        .ok_or_else(|| format!("a delay like 20ms or 500us (up to 60 s), got {s:?}"))
}

/// A cache policy: raidix, lru, smq or bcache.
pub fn cache_policy(s: &str) -> Result<raidlab_cache::Policy, String> {
    raidlab_cache::Policy::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = raidlab_cache::Policy::ALL
            .iter()
            .map(|p| p.name())
            .collect();
        format!("one of {}, got {s:?}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_suffixes_and_refuse_overflow() {
        assert_eq!(bytes("64K"), Ok(64 << 10));
        assert_eq!(bytes("3m"), Ok(3 << 20));
        assert_eq!(bytes("512"), Ok(512));
        assert_eq!(bytes("512B"), Ok(512));
        assert!(bytes("lots").is_err());
        assert!(bytes("").is_err());
        assert!(bytes("99999999999T").is_err());
        assert_eq!(bytes("1.5M"), Ok(3 << 19));
        assert_eq!(bytes("64KiB"), Ok(64 << 10));
        assert_eq!(
            bytes("0.3K"),
            Err("\"0.3K\" is not a whole number of bytes".to_string())
        );
    }

    #[test]
    fn bounded_numbers_say_the_range_and_the_value() {
        let p = bounded(1..=64usize);
        assert_eq!(p("8"), Ok(8));
        assert_eq!(p("65"), Err("1..=64, got 65".to_string()));
        assert_eq!(
            p("soon"),
            Err("expected a number, got \"soon\"".to_string())
        );
    }

    #[test]
    fn byte_ranges_default_to_one_page() {
        let r = byte_range("1M").unwrap();
        assert_eq!((r.offset_bytes, r.len_bytes), (1 << 20, 4096));
        let r = byte_range("1M+64K").unwrap();
        assert_eq!((r.offset_bytes, r.len_bytes), (1 << 20, 64 << 10));
        assert!(byte_range("1M+x").is_err());
    }

    #[test]
    fn latencies_are_microseconds_up_to_a_minute() {
        assert_eq!(latency_us("20ms"), Ok(20_000));
        assert_eq!(latency_us("500us"), Ok(500));
        assert!(latency_us("61000ms").is_err());
        assert!(latency_us("soon").is_err());
    }

    #[test]
    fn masks_are_nonzero_hex_bytes() {
        assert_eq!(mask("0x80"), Ok(0x80));
        assert_eq!(mask("ff"), Ok(0xff));
        assert!(mask("0").is_err());
        assert!(mask("100").is_err());
    }
}
