//! Byte sizes as people write them, the one grammar of every raidlab front end: the
//! engine's flags, the Python package's `--bs`, `--stripe-unit`, TOML values and fio
//! job files (which add their own `kb_base`, percentages and ranges around it).
//!
//! ```text
//!   size   = ws* number ws* [prefix] ["i"] ["b"] ws*      (case-insensitive)
//!   number = digits ["." digits*] | "." digits
//!   prefix = k | m | g | t | p                             (1024^1 .. 1024^5)
//! ```
//!
//! `512`, `4K`, `16k`, `0.5K`, `1.5M`, `4KB`, `4KiB`, `32GiB`. A size must come out as
//! a whole number of bytes (`0.3K` is refused, not rounded) and fit in 64 bits.
//!
//! ```
//! use raidlab_layout::units::{parse_size, SizeError};
//! assert_eq!(parse_size("1.5M"), Ok(3 << 19));
//! assert_eq!(parse_size("0.3K"), Err(SizeError::NotWholeBytes));
//! ```

use std::fmt;

/// Why a text is not a size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeError {
    /// Not of the grammar (`lots`, `4X`, `-4K`, an empty text).
    Malformed,
    /// A fraction of a byte (`0.3K`, `1.5`).
    NotWholeBytes,
    /// More than `u64::MAX` bytes (16 EiB).
    TooLarge,
}

impl SizeError {
    /// A short name of the error, for front ends that map errors to their own types.
    pub fn kind(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::NotWholeBytes => "not_whole_bytes",
            Self::TooLarge => "too_large",
        }
    }

    /// What is allowed and what was given; `quoted` is the given text as the front end
    /// quotes it (Rust's `"4X"`, Python's `'4X'`), so one wording serves both.
    pub fn message(self, quoted: &str) -> String {
        match self {
            Self::Malformed => {
                format!("expected a size such as 512, 4K, 1M or 32G (powers of 1024), got {quoted}")
            }
            Self::NotWholeBytes => format!("{quoted} is not a whole number of bytes"),
            Self::TooLarge => format!("{quoted} is more than 16E (2^64 - 1 bytes)"),
        }
    }
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Malformed => "not a size",
            Self::NotWholeBytes => "not a whole number of bytes",
            Self::TooLarge => "more than 16E",
        })
    }
}

impl std::error::Error for SizeError {}

/// A size as written, before a base is chosen for its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeText {
    /// The number's digits without the decimal point (`1.5` -> 15).
    pub digits: u128,
    /// Digits after the decimal point (`1.5` -> 1).
    pub decimals: u32,
    /// The prefix's power: 0 for none, 1 for K ... 5 for P.
    pub power: u32,
    /// `i` after the prefix (`KiB`): IEC binary, 1024 whatever the base.
    pub iec: bool,
}

/// The most significant digits a number may have: 38 always fit in a `u128`, and any
/// size that fits in 64 bits is written in fewer.
const DIGITS_MAX: usize = 38;

impl SizeText {
    /// Parses the grammar of the module documentation; the value is not computed yet.
    pub fn parse(text: &str) -> Result<Self, SizeError> {
        let t = text.trim();
        let number_end = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, rest) = t.split_at(number_end);
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
            return Err(SizeError::Malformed);
        }
        let all = format!("{whole}{frac}");
        let significant = all.trim_start_matches('0');
        if significant.len() > DIGITS_MAX {
            return Err(SizeError::TooLarge);
        }
        let digits = if significant.is_empty() {
            0
        } else {
            significant
                .parse::<u128>()
                .map_err(|_| SizeError::Malformed)?
        };
        let (power, iec) = suffix(rest.trim_start())?;
        Ok(Self {
            digits,
            decimals: frac.len() as u32,
            power,
            iec,
        })
    }

    /// The bytes it stands for, the prefix a power of `kb_base` (1024 or 1000, fio's
    /// option) unless it is marked IEC (`KiB`: always 1024).
    pub fn bytes(self, kb_base: u64) -> Result<u64, SizeError> {
        debug_assert!(kb_base == 1024 || kb_base == 1000, "kb_base {kb_base}");
        let base = if self.iec { 1024 } else { u128::from(kb_base) };
        let multiplier = base.pow(self.power);
        let numerator = self
            .digits
            .checked_mul(multiplier)
            .ok_or(SizeError::TooLarge)?;
        // Past 10^38 the scale overflows: the numerator is below it, so only 0 divides.
        let Some(scale) = 10u128.checked_pow(self.decimals) else {
            return if numerator == 0 {
                Ok(0)
            } else {
                Err(SizeError::NotWholeBytes)
            };
        };
        if numerator % scale != 0 {
            return Err(SizeError::NotWholeBytes);
        }
        u64::try_from(numerator / scale).map_err(|_| SizeError::TooLarge)
    }
}

/// `[prefix] ["i"] ["b"]`, case-insensitive: the prefix's power and whether `i` marks it.
fn suffix(text: &str) -> Result<(u32, bool), SizeError> {
    let lower = text.to_ascii_lowercase();
    let mut rest = lower.as_str();
    let power = match rest.chars().next() {
        Some(c) => match "kmgtp".find(c) {
            Some(i) => {
                rest = &rest[1..];
                i as u32 + 1
            }
            None => 0,
        },
        None => 0,
    };
    let iec = rest.starts_with('i');
    if iec {
        rest = &rest[1..];
    }
    match rest {
        "" | "b" => Ok((power, iec)),
        _ => Err(SizeError::Malformed),
    }
}

/// A size with every prefix a power of 1024: `4K` is 4096, `1.5M` 1572864.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    SizeText::parse(text)?.bytes(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectors both this crate and the Python package run (tests/data/sizes.tsv):
    /// `TEXT<TAB>BYTES` or `TEXT<TAB>error KIND`; `#` starts a comment.
    const VECTORS: &str = include_str!("../../../tests/data/sizes.tsv");

    #[test]
    fn the_shared_size_vectors_hold() {
        let mut checked = 0;
        for line in VECTORS.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (text, expected) = line.split_once('\t').expect("TEXT<TAB>EXPECTED");
            let text = text.replace("\\s", " ");
            let got = match parse_size(&text) {
                Ok(bytes) => bytes.to_string(),
                Err(e) => format!("error {}", e.kind()),
            };
            assert_eq!(got, expected, "{text:?}");
            checked += 1;
        }
        assert!(checked > 20, "only {checked} vectors");
    }

    #[test]
    fn fios_kb_base_1000_makes_only_unmarked_prefixes_decimal() {
        let size = |t: &str| SizeText::parse(t).unwrap().bytes(1000);
        assert_eq!(size("4k"), Ok(4000));
        assert_eq!(size("4KiB"), Ok(4096));
        assert_eq!(size("1.5m"), Ok(1_500_000));
    }

    #[test]
    fn messages_quote_the_text_as_the_caller_does() {
        assert_eq!(
            SizeError::NotWholeBytes.message("'0.3K'"),
            "'0.3K' is not a whole number of bytes"
        );
        assert!(SizeError::Malformed
            .message("\"4X\"")
            .ends_with("(powers of 1024), got \"4X\""));
    }
}
