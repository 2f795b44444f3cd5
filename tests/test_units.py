from __future__ import annotations

from pathlib import Path

import pytest
from raidlab.errors import RaidlabError
from raidlab.units import format_size, format_size_kib, parse_size, parse_sizes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512", 512),
        ("4K", 4096),
        ("16k", 16384),
        ("1M", 1 << 20),
        ("32G", 32 << 30),
        ("0.5K", 512),
        ("4KB", 4096),
        ("4KiB", 4096),
        ("1t", 1 << 40),
        (" 2m ", 2 << 20),
        (8, 8),
    ],
)
def test_parse_size_accepts_binary_suffixes(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "K", "4X", "-4K", "4 K B x", "0.3K", "1.5"])
def test_parse_size_rejects_malformed_or_fractional_bytes(text: str) -> None:
    with pytest.raises(RaidlabError) as error:
        parse_size(text, "--bs")
    assert str(error.value).startswith("--bs: ")


def test_parse_sizes_range_doubles_inclusively() -> None:
    assert parse_sizes("512..4K") == [512, 1024, 2048, 4096]
    assert len(parse_sizes("512..32M")) == 17


def test_parse_sizes_range_stops_below_an_unreached_end() -> None:
    assert parse_sizes("512..3K") == [512, 1024, 2048]


def test_parse_sizes_combines_lists_and_ranges_sorted_unique() -> None:
    assert parse_sizes("64K,4K,512..1K,4K") == [512, 1024, 4096, 65536]


def test_parse_sizes_rejects_reversed_range() -> None:
    with pytest.raises(RaidlabError):
        parse_sizes("4K..512")


def test_format_size_is_the_shortest_exact_spelling() -> None:
    assert [format_size(n) for n in (512, 4096, 1 << 20, 1536, 32 << 30)] == [
        "512",
        "4K",
        "1M",
        "1536",
        "32G",
    ]
    assert format_size_kib(512) == "0.5K"
    assert format_size_kib(32 << 20) == "32M"


def test_durations_take_fio_style_units() -> None:
    from raidlab.units import parse_duration_ns

    assert parse_duration_ns("10s") == 10_000_000_000
    assert parse_duration_ns("500ms") == 500_000_000
    assert parse_duration_ns("250us") == 250_000
    assert parse_duration_ns("2m") == 120_000_000_000
    assert parse_duration_ns("3") == 3_000_000_000


def test_a_bad_duration_names_the_field() -> None:
    import pytest
    from raidlab.errors import RaidlabError
    from raidlab.units import parse_duration_ns

    with pytest.raises(RaidlabError, match="--runtime"):
        parse_duration_ns("ten seconds", "--runtime")


SIZE_VECTORS = Path(__file__).parent / "data" / "sizes.tsv"


def _size_vectors() -> list[tuple[str, str]]:
    rows = []
    for line in SIZE_VECTORS.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        text, expected = line.split("\t")
        rows.append((text.replace("\\s", " "), expected))
    return rows


@pytest.mark.parametrize(("text", "expected"), _size_vectors())
def test_the_shared_size_vectors_hold_in_python(text: str, expected: str) -> None:
    # The same file the Rust parser's unit test reads: the two sides cannot drift.
    from raidlab import _native

    if expected.startswith("error "):
        with pytest.raises(RaidlabError) as error:
            parse_size(text, "--bs")
        assert str(error.value).startswith("--bs: ")
        with pytest.raises(_native.SizeError) as native_error:
            _native.parse_size(text)
        assert native_error.value.kind == expected.removeprefix("error ")
    else:
        assert parse_size(text) == int(expected)


def test_size_errors_quote_the_text_as_python_does() -> None:
    with pytest.raises(RaidlabError) as error:
        parse_size("0.3K", "--bs")
    assert str(error.value) == "--bs: '0.3K' is not a whole number of bytes"


def test_fio_kb_base_1000_makes_only_unmarked_prefixes_decimal() -> None:
    from raidlab.frontends.fio_values import fio_size

    assert fio_size("4k", "job", "bs", kb_base=1000) == 4000
    assert fio_size("4KiB", "job", "bs", kb_base=1000) == 4096
    assert fio_size("4k", "job", "bs") == 4096
