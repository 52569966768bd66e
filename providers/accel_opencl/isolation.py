"""The first build of an OpenCL C source runs in a bounded child process; its verdict is remembered.

Why (measured 2026-12-01, Mesa 22.3.6 rusticl on llvmpipe): a recursive function makes
``clCreateKernel`` segfault; a kernel of 20,000 statements (or one macro expanded 2^14 times)
builds in 4 s but then keeps ``clCreateKernel`` busy for over 200 s and 1.4 GB. Neither may take
down or hold the process that loads it.

Promise: :func:`isolated_build` compiles the source in ``python -m accel_opencl.build_probe``
(built, kernel created, binary read back and loaded again), in its own session, under
:func:`build_limits`: a wall-clock limit (``ACCELCORE_OPENCL_BUILD_TIMEOUT_S``, default 60 s)
and a resident-memory limit (``ACCELCORE_OPENCL_BUILD_MEMORY_MIB``, default 2048 MiB), both
watched every 20 ms; past either, the child's whole process group is killed. A backstop in the
child: ``RLIMIT_CPU`` (twice the time limit). No ``RLIMIT_AS``: both drivers segfault rather
than fail when the address space runs out (PoCL even on a tiny kernel under 1 GiB), which would
read as a crash of the source, and GPU drivers reserve far more address space than they use.
The child runs with ``MALLOC_ARENA_MAX=2``. A SIGKILL this process did not send (the kernel's
OOM killer) is a RESOURCE_LIMIT, not a crash.

The child is a worker that serves one build at a time and stays for the next (one per memory
limit; replaced after :data:`MAX_BUILDS_PER_WORKER` builds, gone after 30 s idle or when this
process ends), so a cold load costs the compile plus ~1 ms, not an interpreter and driver start
(~0.8 s). Whatever stops a worker that had built before - a crash, the memory limit, a silent
exit - is tried once more in a fresh worker, so only a fresh process's outcome becomes a verdict.
Builds go through one lock (concurrent cold loads wait for each other).

Every exchange carries a request id, and every answer the id and the
:func:`~.build_probe.request_digest` of the device, entry point, options and source the child
read and built: an answer with another id or digest is never used (the worker is replaced). A
wait that does not end in an answer - a KeyboardInterrupt (Ctrl-C) or any other exception
raised while it waits - kills that worker, so no later build reads the answer it left pending.
Each verdict records the cache key it was made for, and :func:`remember` (and the loader,
through :func:`check_belongs`) refuses to keep or use a verdict under another key. The verdict:

* ok - the child's binary (already loaded cleanly there) comes back with it;
* a CL build error - that error, with the build log, as an in-process build would give it;
* a crash - INVALID_ARGUMENT "the driver crashed (SIGSEGV) compiling this source";
* a limit - RESOURCE_LIMIT naming the limit and its variable.

Verdicts are remembered per key (SHA-256 of source, options, entry point and device identity):
in memory, and on disk next to the binary cache (``<cache>/verdicts``) for ok and crash
verdicts, so a warm load - also in a new process - starts no child. A verdict file is read only when it
is a regular file of at most :data:`VERDICT_FILE_BYTES` (anything else in its place is removed, as a
malformed one is) and written whole or not at all (:mod:`accelcore.support.files`). An ok verdict records the
SHA-256 of the binary built for its key (:func:`with_binary`): a cached binary is trusted only if
it hashes to that. A limit verdict is retried when the limits are raised.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import itertools
import json
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace

from accelcore import BackendError, ErrorKind
from accelcore.support.child import child_environment, python_module_command
from accelcore.support.files import read_file, replace_file
from accelcore.support.limits import env_number
from accelcore.support.recent import keep_recent

from . import binary_cache
from .build_probe import request_digest
from .errors import error_from_status

__all__ = [
    "MEMORY_ENV",
    "TIMEOUT_ENV",
    "BuildLimits",
    "Verdict",
    "build_limits",
    "check_belongs",
    "children_started",
    "clear_memory",
    "isolated_build",
    "processes_started",
    "remember",
    "remembered",
    "stop_workers",
    "with_binary",
]

TIMEOUT_ENV = "ACCELCORE_OPENCL_BUILD_TIMEOUT_S"
MEMORY_ENV = "ACCELCORE_OPENCL_BUILD_MEMORY_MIB"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MIB = 2048
_MIN_MEMORY_MIB = 256
_POLL_S = 0.02
_OOM_WORDS = ("out of memory", "MemoryError", "bad_alloc", "Cannot allocate memory")


@dataclass(frozen=True, slots=True)
class BuildLimits:
    """What an isolated build may use."""

    timeout_s: float
    memory_mib: int

    def covers(self, other: BuildLimits) -> bool:
        """True when these limits are no larger than ``other`` (a limit verdict under ``other`` still holds)."""
        return self.timeout_s <= other.timeout_s and self.memory_mib <= other.memory_mib


def build_limits() -> BuildLimits:
    """The limits from the environment; INVALID_ARGUMENT naming a variable that is not a valid number."""
    timeout = env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT_S, 0.1, 24 * 3600.0)
    memory = env_number(MEMORY_ENV, DEFAULT_MEMORY_MIB, _MIN_MEMORY_MIB, float(1 << 24))
    return BuildLimits(timeout, int(memory))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What an isolated build said about one (source, options, entry point, device)."""

    ok: bool
    kind: ErrorKind | None = None
    message: str = ""
    native_call: str | None = None
    native_code: int | None = None
    limits: BuildLimits | None = None
    """Set for a limit verdict: the limits it ran under."""
    lasting: bool = False
    """Worth keeping on disk (ok and crash verdicts)."""
    binary_sha256: bytes | None = None
    """For an ok verdict: SHA-256 of the binary built for this key (what a cached binary must hash to)."""
    key: bytes | None = None
    """The digest of the cache key this verdict was made for (:func:`check_belongs`)."""

    def error(self) -> BackendError:
        assert self.kind is not None
        if self.native_code is not None:
            return error_from_status(self.native_code, self.native_call or "clBuildProgram", self.message)
        return BackendError(self.kind, self.message)


_OK = Verdict(True, lasting=True)
MEMORY_VERDICTS = 4096
VERDICT_FILE_BYTES = 1 << 20
"""The most a verdict file on disk may hold (it records a key, a kind, a message and a digest)."""
_verdicts: OrderedDict[bytes, Verdict] = OrderedDict()
_lock = threading.Lock()
_children = 0


def children_started() -> int:
    """How many isolated builds this process has asked for (for tests and measurements)."""
    return _children


def clear_memory() -> None:
    """Forget the in-memory verdicts (as a new process would)."""
    with _lock:
        _verdicts.clear()


def _name(key: binary_cache.CacheKey) -> bytes:
    return binary_cache.key_digest(key)


def _disk_file(name: bytes) -> str | None:
    directory = binary_cache.disk_dir()
    return None if directory is None else str(directory / "verdicts" / f"{name.hex()}.json")


def check_belongs(key: binary_cache.CacheKey, verdict: Verdict) -> None:
    """INCOMPATIBLE unless ``verdict`` was made for ``key`` (checked before a verdict or its binary is kept)."""
    if verdict.key != _name(key):
        raise BackendError(
            ErrorKind.INCOMPATIBLE,
            "an isolated build's verdict belongs to another source, options, entry point or device; "
            "nothing was kept from it",
        )


def remembered(key: binary_cache.CacheKey, limits: BuildLimits) -> Verdict | None:
    """The verdict for ``key`` (memory, then disk), or None when a child must build it under ``limits``."""
    name = _name(key)
    with _lock:
        verdict = _verdicts.get(name)
    if verdict is None:
        verdict = _read_disk(name)
        if verdict is not None:
            _keep(name, verdict)
    if verdict is not None and verdict.limits is not None and not limits.covers(verdict.limits):
        return None  # stopped by a limit that has since been raised: try again
    return verdict


def _keep(name: bytes, verdict: Verdict) -> None:
    with _lock:
        keep_recent(_verdicts, name, verdict, MEMORY_VERDICTS)


def with_binary(verdict: Verdict, binary: bytes) -> Verdict:
    """``verdict`` recording that ``binary`` is what its key builds to."""
    return replace(verdict, binary_sha256=hashlib.sha256(binary).digest())


def remember(key: binary_cache.CacheKey, verdict: Verdict) -> None:
    """Keep ``verdict`` for ``key`` in memory and (ok and crash verdicts) on disk; one made for another key
    is refused (:func:`check_belongs`), never stored."""
    check_belongs(key, verdict)
    name = _name(key)
    _keep(name, verdict)
    path = _disk_file(name)
    if path is None or not verdict.lasting:
        return
    record = {
        "key": name.hex(),
        "ok": verdict.ok,
        "kind": verdict.kind.name if verdict.kind else None,
        "message": verdict.message,
        "binary_sha256": verdict.binary_sha256.hex() if verdict.binary_sha256 else None,
    }
    text = json.dumps(record).encode("utf-8")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        replace_file(path, lambda handle: handle.write(text))  # no .tmp-* is left when this fails
    except OSError:
        pass


def _read_disk(name: bytes) -> Verdict | None:
    path = _disk_file(name)
    if path is None:
        return None
    try:  # a regular file only: a FIFO put there never blocks the load, /dev/zero is never read
        record = json.loads(read_file(path, "build verdict", VERDICT_FILE_BYTES).decode("utf-8"))
        if record.get("key") != name.hex():
            raise ValueError("another key")
        if record.get("ok") is True:
            digest = record.get("binary_sha256")
            return replace(_OK, binary_sha256=bytes.fromhex(digest) if digest else None, key=name)
        return Verdict(False, ErrorKind[record["kind"]], str(record["message"]), lasting=True, key=name)
    except FileNotFoundError:
        return None
    except (OSError, BackendError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        try:
            os.unlink(path)
        except OSError:
            pass
        return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _memory_of(pid: int) -> int:
    """Resident bytes of process ``pid`` from /proc; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            fields = dict(line.split(":", 1) for line in handle if ":" in line)
        return int(fields["VmRSS"].split()[0]) << 10
    except (OSError, KeyError, ValueError, IndexError):
        return 0


class _Worker:
    """One ``accel_opencl.build_probe`` process, in its own session, serving builds one at a time."""

    def __init__(self, memory_mib: int) -> None:
        global _processes
        env = child_environment()
        env.setdefault("MALLOC_ARENA_MAX", "2")
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            python_module_command("accel_opencl.build_probe"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            start_new_session=True,  # its own process group: a stop kills whatever the driver started too
        )
        self.owner = os.getpid()
        self.builds = 0
        self.tail = ""
        """The end of its stderr, read when it is stopped."""
        self._buffer = bytearray()
        with _lock:
            _processes += 1

    def usable(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def stop(self) -> None:
        """Kill the process group and reap it."""
        if self.owner == os.getpid():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        self.tail = self._stderr_tail()
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def _stderr_tail(self) -> str:
        try:
            self.stderr.seek(0)
            return self.stderr.read().decode("utf-8", "replace")[-2000:]
        except (OSError, ValueError):
            return ""

    def ask(self, request: dict[str, object], source: bytes, limits: BuildLimits) -> tuple[str, dict[str, object]]:
        """("answer", answer to this request's id), or ("time" | "memory" | "ended" | "stray", {}) after which
        the worker is unusable ("stray": an answer to another request). An exception raised while it waits
        (KeyboardInterrupt) leaves an answer pending: the caller must stop this worker."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stderr.seek(0)
        self.stderr.truncate()
        deadline = time.monotonic() + limits.timeout_s
        try:
            self.proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n" + source)
            self.proc.stdin.flush()
        except OSError:
            return "ended", {}
        out = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([out], [], [], _POLL_S)
            if ready:
                chunk = os.read(out, 1 << 20)
                if not chunk:
                    return "ended", {}
                self._buffer += chunk
                continue
            resident = _memory_of(self.proc.pid)
            if resident > limits.memory_mib << 20:
                return "memory", {}
            if time.monotonic() > deadline:
                return "time", {}
        end = self._buffer.index(b"\n") + 1
        line = bytes(self._buffer[:end])
        del self._buffer[:end]
        try:
            answer = json.loads(line)
        except ValueError:
            return "ended", {}
        if not isinstance(answer, dict):
            return "ended", {}
        return ("answer", answer) if answer.get("id") == request["id"] else ("stray", {})


MAX_BUILDS_PER_WORKER = 64
"""A worker is replaced after this many builds (drivers keep some memory per build)."""
_workers: dict[int, _Worker] = {}
_worker_lock = threading.Lock()
_processes = 0
_request_ids = itertools.count(1)


def processes_started() -> int:
    """How many build worker processes this process has started."""
    return _processes


def stop_workers() -> None:
    """Stop every build worker (they also stop on their own when idle or when this process ends)."""
    with _worker_lock:
        for worker in _workers.values():
            worker.stop()
        _workers.clear()


atexit.register(stop_workers)


def isolated_build(
    device_index: int,
    device_uuid: bytes,
    source: bytes,
    options: str,
    entry_point: str,
    limits: BuildLimits,
    key: binary_cache.CacheKey,
) -> tuple[Verdict, bytes | None]:
    """Build ``source`` in a bounded child; (verdict made for ``key``, the child's binary or None).

    The child is a worker kept for later builds (:data:`MAX_BUILDS_PER_WORKER`; it exits after
    30 s idle). A crash, a memory stop, a silent exit or an answer to another request in a worker
    that had built before is tried once more in a fresh one, so an earlier build's leftovers never
    decide this verdict. An exception while waiting (KeyboardInterrupt) stops the worker and
    propagates; nothing is remembered.
    """
    global _children
    digest = request_digest(device_index, device_uuid.hex(), entry_point, options, source)
    request = {
        "id": next(_request_ids),
        "index": device_index,
        "uuid": device_uuid.hex(),
        "entry": entry_point,
        "options": options,
        "size": len(source),
        "cpu_s": int(limits.timeout_s * 2) + 10,  # a backstop should this process die; the wall clock rules
    }
    with _lock:
        _children += 1
    with _worker_lock:
        while True:
            worker = _workers.get(limits.memory_mib)
            fresh = worker is None or not worker.usable()
            if fresh:
                if worker is not None:
                    worker.stop()
                worker = _workers[limits.memory_mib] = _Worker(limits.memory_mib)
            assert worker is not None
            try:
                outcome, answer = worker.ask(request, source, limits)
            except BaseException:
                # Interrupted while the child builds: its answer is still to come, so no later request
                # may ever read from this worker (it would take that answer for its own).
                _workers.pop(limits.memory_mib, None)
                worker.stop()
                raise
            if outcome == "answer" and answer.get("digest") != digest:
                outcome = "stray"  # the right id, yet not what was asked: never trusted
            if outcome == "answer":
                worker.builds += 1
                if worker.builds >= MAX_BUILDS_PER_WORKER:
                    worker.stop()
                    del _workers[limits.memory_mib]
                verdict, binary = _answered(answer, options)
                return replace(verdict, key=_name(key)), binary
            worker.stop()
            del _workers[limits.memory_mib]
            if fresh or outcome == "time":
                return replace(_stopped(outcome, worker, limits), key=_name(key)), None


def _answered(answer: dict[str, object], options: str) -> tuple[Verdict, bytes | None]:
    if answer.get("ok") is True:
        binary = answer.get("binary")
        return _OK, (base64.b64decode(binary) if isinstance(binary, str) else None)
    status = answer.get("status")
    message = f"building the OpenCL C source failed with options {options!r}; build log:\n{answer.get('log', '')}"
    if isinstance(status, int):
        error = error_from_status(status, str(answer.get("call") or "clBuildProgram"), message)
        return Verdict(False, error.kind, message, error.native_call, error.native_code), None
    return Verdict(False, ErrorKind.INVALID_ARGUMENT, f"the isolated build failed: {answer.get('log', '')}"), None


def _stopped(outcome: str, worker: _Worker, limits: BuildLimits) -> Verdict:
    code = worker.proc.returncode
    stderr = worker.tail
    where = "in an isolated build process"
    if outcome == "stray":
        return Verdict(
            False,
            ErrorKind.INVALID_ARGUMENT,
            "the isolated build process answered a request other than this one; it was stopped (try again)",
        )
    if outcome == "time" or code == -signal.SIGXCPU:
        return Verdict(
            False,
            ErrorKind.RESOURCE_LIMIT,
            f"compiling this OpenCL C source took over the {limits.timeout_s:g} s limit ({TIMEOUT_ENV}) {where}; "
            "it was stopped",
            limits=limits,
        )
    if outcome == "memory" or (code != 0 and any(w in stderr for w in _OOM_WORDS)):
        return Verdict(
            False,
            ErrorKind.RESOURCE_LIMIT,
            f"compiling this OpenCL C source used over the {limits.memory_mib} MiB memory limit ({MEMORY_ENV}) "
            f"{where}; it was stopped",
            limits=limits,
        )
    if code == -signal.SIGKILL:  # not sent by this process: the kernel's OOM killer, most likely
        return Verdict(
            False,
            ErrorKind.RESOURCE_LIMIT,
            f"the isolated build process was killed (SIGKILL) compiling this OpenCL C source; the system "
            f"may have run out of memory (the build limit is {limits.memory_mib} MiB, {MEMORY_ENV})",
            limits=limits,
        )
    if code is not None and code < 0:
        return Verdict(
            False,
            ErrorKind.INVALID_ARGUMENT,
            f"the driver crashed ({_signal_name(-code)}) compiling this OpenCL C source {where}; "
            "it is refused (the process that loads it is unaffected)",
            lasting=True,
        )
    return Verdict(
        False,
        ErrorKind.INVALID_ARGUMENT,
        f"the isolated build process ended (exit status {code}) without an answer ({stderr[-300:]!r})",
    )
