"""The selector grammar, without drivers: parsing, matching, and errors that list candidates."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from accelcore.devices.selector import SelectorError, parse_selector, select_many, select_one


@dataclass(frozen=True)
class Dev:
    provider: str
    index: int
    name: str
    uuid: bytes


DEVICES = [
    Dev("opencl", 0, "pthread-haswell (Portable Computing Language)", bytes(range(16))),
    Dev("opencl", 1, "llvmpipe (LLVM 15.0.6, 256 bits)", bytes(range(16, 32))),
    Dev("vulkan", 0, "llvmpipe (LLVM 15.0.6, 256 bits)", bytes(range(32, 48))),
]
UUID1 = bytes(range(16, 32)).hex()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("opencl:0", [("opencl", 0)]),
        ("OpenCL:1", [("opencl", 1)]),
        ("vulkan:0", [("vulkan", 0)]),
        (f"opencl:{UUID1}", [("opencl", 1)]),
        (f"opencl:{UUID1[:8]}-{UUID1[8:12]}-{UUID1[12:16]}-{UUID1[16:20]}-{UUID1[20:]}", [("opencl", 1)]),
        (UUID1.upper(), [("opencl", 1)]),
        ("opencl:*PORTABLE*", [("opencl", 0)]),
        ("opencl:*llvmpipe*", [("opencl", 1)]),
        ("*llvmpipe*", [("opencl", 1), ("vulkan", 0)]),
        ("*", [("opencl", 0), ("opencl", 1), ("vulkan", 0)]),
        ("vulkan:*", [("vulkan", 0)]),
        ("vulkan:llvmpipe (llvm 15.0.6, 256 bits)", [("vulkan", 0)]),
        ("opencl", [("opencl", 0), ("opencl", 1)]),
        (" VULKAN ", [("vulkan", 0)]),
    ],
)
def test_selector_matches(text: str, expected: list[tuple[str, int]]) -> None:
    hits = select_many([text], DEVICES)
    assert [(d.provider, d.index) for d in hits] == expected


def test_globs_also_match_the_providers_tag() -> None:
    @dataclass(frozen=True)
    class Tagged(Dev):
        native: dict[str, str]

    pocl = Tagged("opencl", 0, "pthread-skylake-avx512", bytes(16), {"tag": "pocl"})
    rusticl = Tagged("opencl", 1, "llvmpipe (LLVM 15.0.6, 256 bits)", bytes(range(16)), {"tag": "rusticl"})
    assert select_many(["opencl:*pocl*"], [pocl, rusticl]) == [pocl]
    assert select_many(["*RUSTICL*"], [pocl, rusticl]) == [rusticl]
    with pytest.raises(SelectorError, match="matches no device"):
        select_many(["*nvidia*"], [pocl, rusticl])


def test_parse_kinds() -> None:
    assert parse_selector("opencl:3").kind == "index"
    assert parse_selector("opencl:3").index == 3
    assert parse_selector(f"vulkan:{UUID1}").uuid == bytes.fromhex(UUID1)
    glob = parse_selector("*Pocl*")
    assert (glob.kind, glob.provider, glob.pattern) == ("glob", None, "*pocl*")


def test_several_selectors_union_in_device_order_without_repeats() -> None:
    hits = select_many(["vulkan:0", "*llvmpipe*", "opencl:0"], DEVICES)
    assert [(d.provider, d.index) for d in hits] == [("opencl", 0), ("opencl", 1), ("vulkan", 0)]


def test_no_match_lists_candidates_of_that_provider() -> None:
    with pytest.raises(SelectorError) as info:
        select_one("opencl:7", DEVICES)
    assert "matches no device" in str(info.value)
    assert info.value.candidates == (
        "opencl:0  pthread-haswell (Portable Computing Language)",
        "opencl:1  llvmpipe (LLVM 15.0.6, 256 bits)",
    )


def test_ambiguous_lists_the_matches() -> None:
    with pytest.raises(SelectorError) as info:
        select_one("*llvmpipe*", DEVICES)
    assert "matches 2 devices" in str(info.value)
    assert info.value.candidates == (
        "opencl:1  llvmpipe (LLVM 15.0.6, 256 bits)",
        "vulkan:0  llvmpipe (LLVM 15.0.6, 256 bits)",
    )


def test_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(SelectorError, match=r"unknown provider 'cuda' \(known: opencl, reference, vulkan\)"):
        select_one("cuda:0", DEVICES, known_providers=["reference"])


def test_unavailable_provider_says_why() -> None:
    with pytest.raises(SelectorError, match=r"provider .vulkan. is unavailable: libvulkan\.so\.1 missing"):
        select_one("vulkan:0", DEVICES[:2], unavailable={"vulkan": "libvulkan.so.1 missing"})


def test_bare_provider_name_selects_all_its_devices_or_says_why_not() -> None:
    with pytest.raises(SelectorError, match="matches 2 devices"):
        select_one("opencl", DEVICES)
    with pytest.raises(SelectorError, match=r"provider .vulkan. is unavailable: no libvulkan"):
        select_many(["vulkan"], DEVICES[:2], unavailable={"vulkan": "no libvulkan"})
    with pytest.raises(SelectorError, match="'reference' matches no device"):
        select_many(["reference"], DEVICES, known_providers=["reference"])
    # A word that names no provider is still a glob over device names.
    assert select_many(["cuda"], [*DEVICES, Dev("opencl", 2, "cuda", bytes(16))])[0].index == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty device selector"),
        ("   ", "empty device selector"),
        ("0", "a bare index needs its provider, e.g. opencl:0"),
        ("opencl:", "has nothing after opencl:"),
    ],
)
def test_malformed_selectors(text: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        parse_selector(text)


def test_no_devices_at_all() -> None:
    with pytest.raises(SelectorError, match="matches no device"):
        select_one("*", [])
