"""Parser fuzzing: arbitrary and mutated bytes only ever give BackendError of a parser kind.

Generated inputs across this file: 4000 + 1000 + 3000 + 2000 + 1500 = 11,500 hypothesis
examples, plus a deterministic seed corpus of truncations and bit flips of every
committed package.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelcore import BackendError, ErrorKind, MemorySource
from accelcore.conformance.corpus import KERNELS, SHIPPED_KINDS, load_package
from accelcore.kernels.package_codec import HEADER_BYTES, MAGIC, parse_package, write_package

PARSER_KINDS = {ErrorKind.INVALID_ARGUMENT, ErrorKind.UNSUPPORTED, ErrorKind.RESOURCE_LIMIT}
SEEDS = [load_package(kernel, kind) for kernel in KERNELS for kind in SHIPPED_KINDS]
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def outcome(data: bytes, **limits: int) -> str:
    """Parse; a success must re-encode to the same bytes; a failure must be a parser-kind BackendError."""
    try:
        pkg = parse_package(data, **limits)
    except BackendError as error:
        assert error.kind in PARSER_KINDS, f"unexpected kind {error}"
        assert error.message, "errors must say what was wrong"
        return error.kind.name
    assert write_package(pkg) == data, "an accepted package must be canonical"
    return "ok"


@settings(FUZZ, max_examples=4000)
@given(st.binary(max_size=400))
def test_arbitrary_bytes(data: bytes) -> None:
    outcome(data)


@settings(FUZZ, max_examples=4000 // 4)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_after_the_magic(tail: bytes) -> None:
    outcome(MAGIC + tail)


@settings(FUZZ, max_examples=3000)
@given(
    st.sampled_from(SEEDS),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 7)), min_size=1, max_size=4),
)
def test_bit_flips_of_real_packages(seed: bytes, flips: list[tuple[int, int]]) -> None:
    data = bytearray(seed)
    for position, bit in flips:
        data[position % len(data)] ^= 1 << bit
    outcome(bytes(data))


@settings(FUZZ, max_examples=2000)
@given(
    st.sampled_from(SEEDS),
    st.integers(0, (HEADER_BYTES // 4) - 1),
    st.one_of(st.integers(0, 16), st.integers(0, 2**32 - 1), st.sampled_from([2**31, 2**32 - 1, 2**32 - 2])),
    st.sampled_from([None, 0, 1, 4, 1 << 12]),
)
def test_header_word_overwrites(seed: bytes, word: int, value: int, max_bindings: int | None) -> None:
    data = bytearray(seed)
    struct.pack_into("<I", data, word * 4, value)
    limits = {} if max_bindings is None else {"max_bindings": max_bindings}
    outcome(bytes(data), **limits)


@settings(FUZZ, max_examples=1500)
@given(
    st.sampled_from(SEEDS),
    st.integers(0, 1 << 16),
    st.integers(0, 64),
    st.binary(max_size=16),
    st.lists(st.integers(0, 1 << 16), max_size=3),
)
def test_splices_through_segmented_sources(
    seed: bytes, position: int, removed: int, inserted: bytes, cuts: list[int]
) -> None:
    at = position % (len(seed) + 1)
    data = seed[:at] + inserted + seed[at + removed :]
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    try:
        pkg = parse_package(MemorySource(*pieces))
    except BackendError as error:
        assert error.kind in PARSER_KINDS
        assert outcome(data) == error.kind.name, "segmentation must not change the verdict"
    else:
        assert write_package(pkg) == data


# --------------------------------------------------------------------------- deterministic seed corpus


@pytest.mark.parametrize("index", range(len(SEEDS)))
def test_seed_corpus_truncations(index: int) -> None:
    seed = SEEDS[index]
    assert outcome(seed) == "ok"
    lengths = set(range(0, HEADER_BYTES + 80)) | set(range(0, len(seed), 7)) | {len(seed) - 1}
    for length in sorted(lengths):
        assert outcome(seed[:length]) == "INVALID_ARGUMENT", f"truncation to {length} bytes"
    assert outcome(seed + b"\0") == "INVALID_ARGUMENT"


@pytest.mark.parametrize("index", range(0, len(SEEDS), 3))
def test_seed_corpus_header_and_table_bit_flips(index: int) -> None:
    seed = SEEDS[index]
    verdicts: dict[str, int] = {}
    for bit in range((HEADER_BYTES + 64) * 8):
        data = bytearray(seed)
        data[bit // 8] ^= 1 << (bit % 8)
        verdict = outcome(bytes(data))
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    # Most single-bit header flips must be caught; the rest are still well-formed packages.
    assert verdicts.get("INVALID_ARGUMENT", 0) > verdicts.get("ok", 0)
    assert "UNSUPPORTED" in verdicts  # version / module-kind flips


def test_seed_corpus_limits() -> None:
    for seed in SEEDS:
        assert outcome(seed, max_bytes=len(seed) - 1) == "RESOURCE_LIMIT"
        assert outcome(seed, max_bindings=0) == "RESOURCE_LIMIT"
