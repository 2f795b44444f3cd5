//! Sizes in raidlab's one grammar (`raidlab_layout::units`) for the Python package:
//! `raidlab.units.parse_size` and fio job files call [`parse_size`], the engine's flags
//! the same parser, so `1.5M` means one thing everywhere.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use raidlab_sim::layout::units::SizeText;

pyo3::create_exception!(
    _native,
    SizeError,
    PyValueError,
    "A text that is not a size: `.kind` is `malformed`, `not_whole_bytes` or \
     `too_large`, `.message` what is allowed and what was given (the text as Python's \
     repr quotes it). A subclass of ValueError."
);

/// Bytes in `text` (`"4K"` -> 4096, `"1.5M"`, `"32GiB"`): prefixes K, M, G, T, P are
/// powers of `kb_base` (1024, or fio's 1000) unless marked IEC (`KiB`: 1024 always),
/// case-insensitive, with an optional `B`. Raises SizeError (a ValueError) with `.kind`
/// and `.message`.
#[pyfunction]
#[pyo3(signature = (text, kb_base = 1024))]
pub fn parse_size(py: Python<'_>, text: &str, kb_base: u64) -> PyResult<u64> {
    if kb_base != 1024 && kb_base != 1000 {
        return Err(PyValueError::new_err(format!(
            "kb_base: 1024 or 1000, got {kb_base}"
        )));
    }
    SizeText::parse(text)
        .and_then(|size| size.bytes(kb_base))
        .map_err(|e| {
            let quoted = PyString::new(py, text)
                .repr()
                .map(|r| r.to_string())
                .unwrap_or_else(|_| format!("{text:?}"));
            let err = SizeError::new_err(e.message(&quoted));
            let value = err.value(py);
            let set = value
                .setattr("kind", e.kind())
                .and_then(|()| value.setattr("message", e.message(&quoted)));
            match set {
                Ok(()) => err,
                Err(setattr_failed) => setattr_failed,
            }
        })
}
