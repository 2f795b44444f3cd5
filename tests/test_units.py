from __future__ import annotations

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
