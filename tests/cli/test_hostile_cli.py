"""Hostile files and option values given to ``accel``: /dev/zero, FIFOs, huge sparse files and symlinks to
them as an artifact, a ``--bind``/``--expect-output`` array, an ``--arg NAME=@FILE``, an option file
(``--expect``, ``--merge``, ``--cases``, ``--skips``, ``--durations``); ``.npy`` headers that claim more
than the file holds; deeply nested or malformed reports; a caselist with a NUL or a million lines; and
``--out`` writing exactly the path it reports, whole or not at all.

Each ends at once in a clean CLI error (exit 3 for a refused file, 2 for an option's; the JSON error
object under ``--json``), never a traceback, a hang or a read until memory runs out. Every test has a
timeout, so a regression fails instead of hanging. (The Python layer's side: tests/hostile/test_files.py.)
"""

from __future__ import annotations

import errno
import json
import os
import struct
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accel_cli.main import main
from click.testing import CliRunner, Result

from accelcore.testing.programs import encode_program

REPORT = Path(__file__).parent / "data" / "numerics-report.json"


@pytest.fixture
def ref_env(monkeypatch: pytest.MonkeyPatch, cli_env: dict[str, str]) -> None:
    monkeypatch.setenv("ACCEL_PROVIDERS", "reference")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The add_u32 reference program and its arrays, next to the hostile files."""
    (tmp_path / "add.acrp").write_bytes(encode_program("add_u32"))
    np.save(tmp_path / "a.npy", np.arange(8, dtype=np.uint32))
    np.save(tmp_path / "b.npy", np.full(8, 10, dtype=np.uint32))
    np.save(tmp_path / "o.npy", np.zeros(8, dtype=np.uint32))
    os.mkfifo(tmp_path / "fifo")
    with open(tmp_path / "sparse", "wb") as handle:
        handle.truncate(8 << 30)
    (tmp_path / "zero-link").symlink_to("/dev/zero")
    (tmp_path / "full-link").symlink_to("/dev/full")
    return tmp_path


HOSTILE = {
    "dev-zero": ("/dev/zero", "is a character device"),
    "fifo": ("fifo", "is a FIFO"),
    "symlink-to-dev-zero": ("zero-link", "a character device (through a symlink to /dev/zero)"),
}
HOSTILE_AND_SPARSE = {**HOSTILE, "sparse-8g": ("sparse", f"holds {8 << 30} bytes, more than")}


def _invoke(args: Sequence[str], folder: Path) -> tuple[Result, float]:
    started = time.monotonic()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(main, list(args))
    finally:
        os.chdir(cwd)
    return result, time.monotonic() - started


def _refused(args: Sequence[str], folder: Path, code: int, words: str, *, json_error: bool = True) -> dict[str, Any]:
    """``accel args`` exits ``code`` within seconds, saying ``words``; under --json stdout is the error object."""
    result, seconds = _invoke(args, folder)
    assert result.exit_code == code, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # a clean exit, not an escape
    assert words in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert seconds < 10, seconds
    if not json_error:
        return {}
    document = json.loads(result.stdout)
    assert document["error"]["exit_code"] == code and words in document["error"]["message"]
    return dict(document["error"])


def _bind(*extra: str, one: str = "b.npy") -> list[str]:
    return ["add.acrp", "--bind", "0=a.npy", "--bind", f"1={one}", "--bind", "2=o.npy", *extra]


# --------------------------------------------------------------------------- artifacts, arrays, --arg files


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(HOSTILE_AND_SPARSE))
def test_inspect_refuses_a_special_or_huge_file_at_once(files: Path, cli_env: Any, name: str) -> None:
    path, words = HOSTILE_AND_SPARSE[name]
    error = _refused(["inspect", path, "--json"], files, 3, words)
    assert error["argument"] == "FILE" and path in error["message"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_pack_refuses_a_special_file(files: Path, cli_env: Any, name: str) -> None:
    path, words = HOSTILE[name]
    _refused(["pack", path, "-o", "out.kpkg", "--json"], files, 3, words)
    assert not (files / "out.kpkg").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_run_refuses_a_special_artifact_or_bind_file(files: Path, ref_env: Any, name: str) -> None:
    path, words = HOSTILE[name]
    _refused(["run", "reference:0", path, "--bind", "0=a.npy", "--json"], files, 3, words)
    error = _refused(["run", "reference:0", *_bind("--json", one=path)], files, 3, words)
    assert error["argument"] == "--bind"


def _npy_with_header(path: Path, header: str, version: int = 1, data: bytes = b"\0" * 16) -> None:
    text = header + " " * (-(len(header) + 11) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(text))
    path.write_bytes(b"\x93NUMPY" + bytes([version, 0]) + length + text.encode("latin1") + data)


@pytest.mark.timeout(60)
def test_a_npy_header_claiming_4_tib_is_refused_before_numpy_allocates(files: Path, ref_env: Any) -> None:
    _npy_with_header(files / "huge.npy", "{'descr': '<u4', 'fortran_order': False, 'shape': (1099511627776,), }")
    _refused(
        ["run", "reference:0", *_bind("--json", one="huge.npy")],
        files,
        3,
        "huge.npy: the .npy header describes a (1099511627776,) uint32 array of 4398046511104 bytes, but the file "
        "holds 16 bytes after its header",
    )


@pytest.mark.timeout(60)
def test_a_too_long_npy_header_is_called_that_not_an_object_array(files: Path, ref_env: Any) -> None:
    header = "{'descr': '<u4', 'fortran_order': False, 'shape': (8,), }" + " " * 20000
    _npy_with_header(files / "long.npy", header, version=2, data=b"\0" * 32)
    error = _refused(["run", "reference:0", *_bind("--json", one="long.npy")], files, 3, "the .npy header is")
    assert "more than the 10000 numpy reads" in error["message"] and "object" not in error["message"]


@pytest.mark.timeout(60)
def test_a_well_formed_npy_still_binds_and_an_object_array_is_still_refused(files: Path, ref_env: Any) -> None:
    np.save(files / "objects.npy", np.array([1, "x"], dtype=object), allow_pickle=True)
    _refused(["run", "reference:0", *_bind("--json", one="objects.npy")], files, 3, "object arrays cannot be bound")
    result, _ = _invoke(["run", "reference:0", *_bind("--out", "2=sum.npy")], files)
    assert result.exit_code == 0, result.output
    assert np.load(files / "sum.npy").tolist() == list(range(10, 18))


SOURCE = """typedef struct { float a; int b; } P;
__kernel void k(__global float *x, P p) { x[get_global_id(0)] = p.a; }
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_an_arg_file_that_is_special_is_an_option_error(files: Path, cli_env: Any, name: str) -> None:
    path, words = HOSTILE[name]
    (files / "s.cl").write_text(SOURCE)
    error = _refused(
        ["pack", "s.cl", "-o", "s.kpkg", "--grid-from", "0", "--arg", f"p=@{path}", "--json"], files, 2, words
    )
    assert error["argument"] == "--arg"


@pytest.mark.timeout(120)
def test_expect_output_refuses_a_special_file(accel: Any, files: Path) -> None:
    """--expect-output is read only when DEVICE matches several devices: OpenCL here."""
    listed = accel(["devices", "--json"], providers=["opencl"])
    devices = [d["id"] for d in json.loads(listed.stdout)["devices"]] if listed.returncode == 0 else []
    if len(devices) < 2:
        pytest.skip("--expect-output needs two OpenCL devices")
    (files / "twice.cl").write_text("__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }\n")
    np.save(files / "x.npy", np.arange(8, dtype=np.float32))
    for path, words in HOSTILE.values():
        started = time.monotonic()
        proc = accel(
            ["run", "opencl", "twice.cl", "--global", "8", "--bind", "x=x.npy", "--expect-output", f"x={path}"],
            providers=["opencl"],
            cwd=files,
            timeout=60,
        )
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert "--expect-output" in proc.stderr and words in proc.stderr
        assert time.monotonic() - started < 30


# --------------------------------------------------------------------------- --out


@pytest.mark.timeout(60)
def test_out_writes_exactly_the_path_it_reports(files: Path, ref_env: Any) -> None:
    (files / "result.bin").write_bytes(b"a stale result")
    result, _ = _invoke(["run", "reference:0", *_bind("--out", "2=result.bin")], files)
    assert result.exit_code == 0, result.output
    assert "Saved slot 2 to result.bin." in result.stdout
    assert np.load(files / "result.bin").tolist() == list(range(10, 18))  # the stale file was replaced
    assert not (files / "result.bin.npy").exists()
    assert not [p.name for p in files.iterdir() if ".tmp-" in p.name]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("fifo", "fifo is a FIFO (named pipe), not a regular file"),
        ("full-link", "full-link is a character device (through a symlink to /dev/full)"),
        (".", "is a directory"),
    ],
)
def test_out_refuses_a_special_file_before_the_run(files: Path, ref_env: Any, target: str, words: str) -> None:
    before = sorted(p.name for p in files.iterdir())
    error = _refused(["run", "reference:0", *_bind("--out", f"2={target}", "--json")], files, 2, words)
    assert error["argument"] == "--out"
    assert sorted(p.name for p in files.iterdir()) == before  # no fifo.npy, full-link.npy, ..npy


@pytest.mark.timeout(60)
def test_a_failed_out_write_leaves_no_temporary_file_and_the_old_file_as_it_was(
    files: Path, ref_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (files / "result.npy").write_bytes(b"an earlier result")

    def disk_full(handle: Any, array: Any, **kwargs: Any) -> None:
        handle.write(b"\x93NUMPY partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("accel_cli.npyfile.np.save", disk_full)
    error = _refused(["run", "reference:0", *_bind("--out", "2=result.npy", "--json")], files, 2, "No space left")
    assert error["argument"] == "--out"
    assert (files / "result.npy").read_bytes() == b"an earlier result"
    assert not [p.name for p in files.iterdir() if ".tmp-" in p.name]


# --------------------------------------------------------------------------- conformance option files


OPTION_FILES = {
    "--expect": ["conformance", "--expect", "{}", "reference:0", "--json", "-"],
    "--skips": ["conformance", "--skips", "{}", "reference:0", "--json", "-"],
    "--cases": ["conformance", "--cases", "{}", "reference:0", "--json", "-"],
    "--durations": ["conformance", "--shard", "1/2", "--durations", "{}", "reference:0", "--json", "-"],
    "--merge": ["conformance", "--merge", "{}", "--json", "-"],
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("option", sorted(OPTION_FILES))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_an_option_file_that_is_special_is_refused_at_once(files: Path, ref_env: Any, option: str, name: str) -> None:
    path, words = HOSTILE[name]
    args = [path if a == "{}" else a for a in OPTION_FILES[option]]
    error = _refused(args, files, 3, words)
    assert error["argument"] == option


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("option", "suffix"), [("--expect", ".toml"), ("--expect", ".json"), ("--durations", ".json"), ("--merge", ".json")]
)
def test_a_deeply_nested_option_file_is_refused(files: Path, ref_env: Any, option: str, suffix: str) -> None:
    deep = files / f"deep{suffix}"
    deep.write_text(("a = " if suffix == ".toml" else "") + "[" * 100000 + "]" * 100000 + "\n")
    args = [str(deep) if a == "{}" else a for a in OPTION_FILES[option]]
    error = _refused(args, files, 3, "nested too deeply")
    assert error["argument"] == option


@pytest.mark.timeout(60)
@pytest.mark.parametrize("option", ["--cases", "--skips"])
def test_a_caselist_with_a_nul_byte_is_refused(files: Path, ref_env: Any, option: str) -> None:
    listing = files / "cases.txt"
    listing.write_bytes(b"metadata.stable-valid\nintent.\0reserved-flags\n")
    args = [str(listing) if a == "{}" else a for a in OPTION_FILES[option]]
    _refused(args, files, 3, "cases.txt line 2 holds the control character '\\x00'")


def _report(cell: Any = None, *, run: Any = "keep") -> dict[str, Any]:
    document = json.loads(REPORT.read_text())
    first = document["runs"][0]
    if run != "keep":
        document["runs"][0] = run
    elif cell is not None:
        first["cases"][0] = cell(first["cases"][0])
    return document


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("name", "document", "words"),
    [
        ("null-cell", _report(lambda cell: None), "a case is null, not an object"),
        ("int-expectation", _report(lambda cell: {**cell, "expectation": 5}), "its expectation is a number"),
        ("list-metrics", _report(lambda cell: {**cell, "metrics": [1]}), "its metrics is a list"),
        ("null-run", _report(run=None), "a run is null, not an object"),
        ("string-device", _report(run={"device": "x", "host": "h", "outcome": "completed"}), "a run's device is"),
    ],
    ids=["null-cell", "int-expectation", "list-metrics", "null-run", "string-device"],
)
def test_merge_of_a_malformed_report_is_refused(
    files: Path, ref_env: Any, name: str, document: dict[str, Any], words: str
) -> None:
    report = files / f"{name}.json"
    report.write_text(json.dumps(document))
    error = _refused(["conformance", "--merge", str(report), "--json", "-"], files, 3, words)
    assert error["argument"] == "--merge" and "malformed run entry" in error["message"]
    _refused(
        ["conformance", "--shard", "1/2", "--durations", str(report), "reference:0"], files, 3, words, json_error=False
    )


@pytest.mark.timeout(180)
def test_a_million_line_caselist_runs(accel: Any, tmp_path: Path) -> None:
    """The ids went on each worker's command line: OSError 'Argument list too long'. They go in its plan file."""
    listing = tmp_path / "cases.txt"
    listing.write_text("metadata.stable-valid\n" * 999_999 + "intent.\n")
    report = tmp_path / "m.json"
    proc = accel(
        ["conformance", "reference:0", "--cases", listing, "--retries", "0", "--json", report],
        providers=["reference"],
        timeout=150,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = json.loads(report.read_text())["runs"]
    ids = [case["id"] for case in run["cases"]]
    assert "metadata.stable-valid" in ids and all(i == "metadata.stable-valid" or i.startswith("intent.") for i in ids)


@pytest.mark.timeout(60)
def test_a_million_unknown_ids_are_named_briefly(accel: Any, tmp_path: Path) -> None:
    listing = tmp_path / "cases.txt"
    listing.write_text("".join(f"nope.{n}\n" for n in range(1_000_000)))
    proc = accel(["conformance", "reference:0", "--cases", listing], providers=["reference"], timeout=50)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "'nope.9' and 999990 more matches no case" in proc.stderr and len(proc.stderr) < 4000


@pytest.mark.timeout(30)
@pytest.mark.parametrize("option", ["--json", "--junit", "--html", "--csv"])
def test_a_conformance_report_aimed_at_a_fifo_is_refused_not_blocked(ref_env: None, files: Path, option: str) -> None:
    result, seconds = _invoke(["conformance", "reference:0", "--case", "metadata.", option, "fifo"], files)
    assert result.exit_code == 2, (result.output, result.exception)
    assert "fifo is a FIFO (named pipe), not a regular file" in result.stderr and seconds < 20
    assert "started" not in result.stderr  # refused before the run, not after it
    assert (files / "fifo").is_fifo()  # left as it was


@pytest.mark.timeout(30)
def test_pack_output_aimed_at_a_fifo_is_refused_and_a_regular_file_is_written_whole(ref_env: None, files: Path) -> None:
    source = files / "k.cl"
    source.write_text("__kernel void k(__global int *x) { x[get_global_id(0)] = 1; }\n")
    result, _ = _invoke(["pack", str(source), "-o", "fifo", "--global", "4"], files)
    assert result.exit_code == 2 and "fifo is a FIFO (named pipe), not a regular file" in result.stderr, result.output
    result, _ = _invoke(["pack", str(source), "-o", "k.kpkg", "--global", "4"], files)
    assert result.exit_code == 0, result.output
    assert (files / "k.kpkg").stat().st_size > 0 and not list(files.glob(".tmp-*"))
