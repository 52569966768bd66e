"""One benchmark run over every selected device: measure, write JSON, render table and plots.

Each item is measured in its own guard: a failure is recorded in the device's
``errors`` with its reason and the run goes on, so one broken driver never
loses the rest of the results. Nothing is retried or smoothed over.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from accelcore import ArtifactRef, TargetIdentity
from accelcore.devices.registry import DeviceEntry, ProviderFamily, ProviderUnavailable
from accelcore.kernels.package import ModuleKind

from . import copyfree, dispatch, highlevel_call, kernels, program_load, reload_arguments, transfers
from .config import DOMAINS, Config
from .incall import in_call_overhead
from .items import ITEMS
from .machine import machine_facts
from .overhead import engine_overhead, pending_poll_overhead
from .report import regenerate
from .targets_found import Target, find_targets

if TYPE_CHECKING:  # imported at run time only where used: raw_opencl imports pyopencl, raw_vulkan the vulkan binding
    from .contract_side import ContractSession
    from .raw_opencl import RawOpenCL
    from .raw_vulkan import RawVulkan
    from .sides import DispatchSide, RoundTripSide, TransferSide

__all__ = ["ITEMS", "SCHEMA", "run"]

SCHEMA = "accel-bench/1"
DEFAULT_JSON = Path("docs/benchmarks/results.json")
Log = Callable[[str], None]
T = TypeVar("T")


class _ProgramBinaries(Protocol):
    """The OpenCL provider's extras the binary-load item uses (not part of the Accelerator contract)."""

    @property
    def binary_target(self) -> TargetIdentity: ...

    def program_binary(self, program: Any) -> bytes: ...


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


ITEM_LIMIT_ENV = "ACCEL_BENCH_ITEM_LIMIT_S"
"""Seconds one item may take before it is recorded as an error (default 900; 0 = no limit)."""


_watch = {"active": False}


class ItemTimeout(Exception):
    """An item ran past its time limit (a hung driver or provider); recorded as that item's error."""


@contextlib.contextmanager
def _watchdog(what: str) -> Iterator[None]:
    """Raise :class:`ItemTimeout` in the main thread when ``what`` outlives the item limit.

    A SIGALRM timer, set outside every timed region: a hang in Python code (a busy poll that never
    sees its event finish) ends as an error of that item instead of hanging the whole run. A
    driver call that blocks in C is interrupted only when it returns.
    """
    limit = float(os.environ.get(ITEM_LIMIT_ENV, "900"))
    if limit <= 0 or threading.current_thread() is not threading.main_thread() or _watch["active"]:
        yield  # no limit, not the main thread, or an outer item's watchdog already runs
        return

    def expire(signum: int, frame: object) -> None:
        raise ItemTimeout(f"{what} ran past {limit:g} s ({ITEM_LIMIT_ENV}); a driver or provider hung")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limit)
    _watch["active"] = True
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _watch["active"] = False


def _guard(device: dict[str, Any], what: str, log: Log, fn: Callable[[], T]) -> T | None:
    try:
        with _watchdog(what):
            return fn()
    except Exception as exc:
        message = f"{what}: {type(exc).__name__}: {exc}"
        device.setdefault("errors", []).append(message)
        log(f"  ERROR {message}")
        log("".join(traceback.format_exception(exc)).rstrip())
        return None


def _module_kind(api: str | None) -> ModuleKind:
    return ModuleKind.SPIRV_VULKAN if api == "vulkan" else ModuleKind.OPENCL_SOURCE


def _closing(stack: ExitStack, device: dict[str, Any], what: str, log: Log, close: Callable[[], object]) -> None:
    """Register ``close`` for the end of the device's run; a failing close is recorded, not raised."""
    stack.callback(lambda: _guard(device, f"closing {what}", log, close))


def _open_ours(
    target: Target, stack: ExitStack, device: dict[str, Any], log: Log
) -> tuple[ContractSession, ContractSession]:
    """(ours session through the engine, provider-direct session); raises with the reason when impossible."""
    from .contract_side import ContractSession, ProviderApi
    from .engine_side import EngineApi

    family, entry = target.family, target.entry
    if family is None or entry is None:
        raise LookupError(f"{target.device_id}: no provider family to open it with")
    kind = _module_kind(target.api)
    provider_a = family.open(entry)
    ours = ContractSession(EngineApi.over(provider_a), "ours", kind)
    _closing(stack, device, "ours", log, ours.close)
    provider_b = family.open(entry)
    direct = ContractSession(ProviderApi(provider_b), "provider-direct", kind)
    _closing(stack, device, "provider-direct", log, direct.close)
    info = ours.info
    for provider in (provider_a, provider_b):
        if getattr(provider, "validation_enabled", False):
            device["notes"].append("the Vulkan validation layer is ON for ours: its cost is in every ours timing")
            break
    device["notes"].append(
        "ours hands at most 16 submissions per queue to the driver (the provider's window: a cancel of one of "
        "them answers BUSY) and keeps later ones on the host, cancellable; raw-gated puts a user-event gate on "
        "every enqueue (what keeping each one cancellable natively costs). raw waits in clWaitForEvents, raw-poll "
        "and raw-gated flush and busy-poll the status as ours does"
        if target.api == "opencl"
        else "ours hands every submission to vkQueueSubmit at admission (open gate; a cancel then answers BUSY, "
        "only batches held by a closed gate are cancellable); raw waits in vkWaitForFences, raw-poll busy-polls "
        "vkGetFenceStatus as ours polls the timeline semaphore"
    )
    device["device_info"] = {
        "capabilities": int(info.capabilities),
        "capability_names": [c.name for c in type(info.capabilities) if info.capabilities & c and c.name],
        "limits": info.limits.as_dict(),
        "uuid": info.identity.uuid.hex(),
    }
    return ours, direct


def _raw_side(target: Target, stack: ExitStack, device: dict[str, Any], log: Log) -> RawOpenCL | RawVulkan:
    if target.api == "opencl":
        from . import raw_opencl

        platform = target.native.get("platform") or target.native.get("platform_name")
        cl_device = raw_opencl.find_device(platform, target.native.get("device_name", target.name))
        device["driver"] = {
            "platform": cl_device.platform.name.strip(),
            "platform_version": cl_device.platform.version.strip(),
            "device_version": cl_device.version.strip(),
            "driver_version": cl_device.driver_version.strip(),
        }
        return raw_opencl.RawOpenCL(cl_device)
    if target.api == "vulkan":
        from . import raw_vulkan

        raw = raw_vulkan.RawVulkan(target.uuid or None)
        _closing(stack, device, "raw", log, raw.close)
        device["driver"] = raw.driver_facts()
        return raw
    raise LookupError(f"no raw API for provider {target.provider}")


def _provider_window(target: Target, ours: ContractSession | None) -> dict[str, Any]:
    """How many submissions the provider hands to the driver at most per queue (the rest stay
    cancellable on the host), as the provider reports it."""
    if ours is None:
        return {"size": None, "what": "ours not measured"}
    provider = getattr(getattr(ours.api, "engine", None), "provider", None) or getattr(ours.api, "provider", None)
    size = getattr(provider, "window", None)
    if target.api == "opencl" and isinstance(size, int):
        return {
            "size": size,
            "what": f"at most {size} submissions per queue are handed to the driver (not cancellable: BUSY); "
            "later ones wait on the host, cancellable, and are enqueued in order as the window frees",
        }
    if target.api == "vulkan":
        return {
            "size": None,
            "what": "no window: every submission reaches vkQueueSubmit at admission (cancel answers BUSY); "
            "only the conformance hold keeps batches on the host",
        }
    return {"size": size, "what": "not reported by the provider"}


def _copy_freedom(config: Config, ours: ContractSession, arrays: transfers.HostArrays) -> dict[str, Any]:
    """Traced peaks for a large and a small transfer each way, and for many and few submit+poll cycles."""
    out: dict[str, Any] = {}
    domain = next((d for d in ("host", "shared", "device") if ours.offers(d)), None)
    if domain is None:
        return {"transfers": {"not_measured": "no memory domain"}}
    large = min(config.copyfree_large, int(ours.info.limits.max_buffer_bytes))
    buffer = ours.open_buffer(large, domain)
    try:
        for nbytes in (config.copyfree_small, large):
            ops = {"write": ours.writer(buffer, arrays.src(nbytes)), "read": ours.reader(buffer, arrays.dst(nbytes))}
            for direction, op in ops.items():
                op()  # first touch of driver memory happens outside the traced run
                entry = copyfree.traced(op)
                entry.update({"what": f"{direction} {nbytes >> 20} MiB, {domain} domain", "bytes": nbytes})
                out[f"{direction}_{nbytes >> 20}MiB"] = entry
    finally:
        ours.close_buffer(buffer)
    for count in (config.copyfree_cycles_small, config.copyfree_cycles):
        ours.cycles(10)

        def cycles(count: int = count) -> None:
            return ours.cycles(count)

        entry = copyfree.traced(cycles)
        entry.update({"what": f"{count} submit+poll cycles", "cycles": count})
        out[f"cycles_{count}"] = entry
    return out


def _binary_loads(ours: ContractSession, direct: ContractSession, repeats: int) -> dict[str, Any]:
    """OPENCL_BINARY packages: binaries come from the provider's own extras (program_binary, binary_target)."""
    from .contract_side import ProviderApi, artifact_of, tiny_package

    api = direct.api
    if not isinstance(api, ProviderApi):
        raise TypeError(f"{direct.name} does not call its provider directly")
    provider = cast(_ProgramBinaries, api.provider)
    target_identity = provider.binary_target

    def binary_package(source: str) -> ArtifactRef:
        program = direct.load(artifact_of(tiny_package(ModuleKind.OPENCL_SOURCE, source.encode())))
        try:
            binary = provider.program_binary(program)
        finally:
            direct.unload(program)
        return artifact_of(tiny_package(ModuleKind.OPENCL_BINARY, binary, target_identity))

    def cold_package(nonce: str) -> ArtifactRef:
        return binary_package(kernels.unique_cl_source(nonce))

    return program_load.cold_warm(
        cold_package,
        binary_package(kernels.CL_SOURCE),
        ours.load,
        ours.unload,
        repeats,
    )


def _program_loads(
    target: Target,
    ours: ContractSession | None,
    direct: ContractSession | None,
    raw: RawOpenCL | RawVulkan | None,
    config: Config,
) -> dict[str, Any]:
    from .contract_side import artifact_of, tiny_package

    out: dict[str, dict[str, Any]] = {}
    repeats = config.load_repeats
    if ours is not None:
        kind = _module_kind(target.api)
        cold: Callable[[str], ArtifactRef]
        if kind is ModuleKind.OPENCL_SOURCE:
            cold = lambda nonce: artifact_of(tiny_package(kind, kernels.unique_cl_source(nonce).encode()))  # noqa: E731
        else:
            cold = lambda nonce: artifact_of(tiny_package(kind, kernels.unique_spirv(nonce)))  # noqa: E731
        label = "opencl-source" if kind is ModuleKind.OPENCL_SOURCE else "spirv-pipeline"
        out["ours"] = {
            label: program_load.cold_warm(cold, artifact_of(tiny_package(kind)), ours.load, ours.unload, repeats)
        }
        if kind is ModuleKind.OPENCL_SOURCE and direct is not None:
            out["ours"]["opencl-binary"] = _binary_loads(ours, direct, repeats)
    if raw is not None and target.api == "opencl":
        from .raw_opencl import RawOpenCL

        assert isinstance(raw, RawOpenCL)
        out["raw"] = {
            "opencl-source": program_load.cold_warm(
                kernels.unique_cl_source, kernels.CL_SOURCE, raw.build_source, lambda p: None, repeats
            )
        }
        binary = raw.binary_of(raw.build_source(kernels.CL_SOURCE))
        out["raw"]["opencl-binary"] = program_load.cold_warm(
            lambda nonce: raw.binary_of(raw.build_source(kernels.unique_cl_source(nonce))),
            binary,
            raw.build_binary,
            lambda p: None,
            repeats,
        )
    elif raw is not None and target.api == "vulkan":
        from .raw_vulkan import RawVulkan

        assert isinstance(raw, RawVulkan)
        set_layout, layout = raw._layouts()
        cache = raw.create_pipeline_cache()
        try:
            out["raw"] = {
                "spirv-pipeline, no cache": program_load.cold_warm(
                    kernels.unique_spirv,
                    kernels.tiny_spirv(),
                    lambda spv: raw.pipeline(spv, layout),
                    raw.destroy_pipeline,
                    repeats,
                ),
                "spirv-pipeline, VkPipelineCache": program_load.cold_warm(
                    kernels.unique_spirv,
                    kernels.tiny_spirv(),
                    lambda spv: raw.pipeline(spv, layout, cache),
                    raw.destroy_pipeline,
                    repeats,
                ),
            }
        finally:
            raw.destroy_pipeline_cache(cache)
            raw.destroy_layouts(set_layout, layout)
    return out


def bench_device(
    target: Target,
    config: Config,
    arrays: transfers.HostArrays,
    log: Log,
    items: Sequence[str] = ITEMS,
) -> dict[str, Any]:
    """Every item of ``items`` for one device; failures land in ``errors``."""
    wanted = set(items)
    device: dict[str, Any] = {
        "device_id": target.device_id,
        "provider": target.provider,
        "api": target.api,
        "name": target.name,
        "errors": [],
        "notes": [],
    }
    log(f"== {target.device_id} {target.name}")
    with ExitStack() as stack:
        ours = direct = None
        if target.ours_missing:
            device["ours_status"] = target.ours_missing
        else:
            pair = _guard(device, "opening ours", log, lambda: _open_ours(target, stack, device, log))
            if pair is not None:
                ours, direct = pair
                device["ours_status"] = "measured"
            else:
                device["ours_status"] = device["errors"][-1]
        raw = _guard(device, "opening raw", log, lambda: _raw_side(target, stack, device, log)) if target.api else None

        transfer_sides: dict[str, TransferSide[Any]] = {}
        missing: dict[str, str] = {}
        if ours is not None:
            transfer_sides["ours"] = ours
        else:
            missing["ours"] = device["ours_status"]
        if raw is not None:
            transfer_sides["raw"] = raw
        else:
            missing["raw"] = "no raw API side"
        if "transfers" in wanted:
            rows = _guard(
                device,
                "transfers",
                log,
                lambda: transfers.transfer_rows(config, arrays, DOMAINS, transfer_sides, missing, log),
            )
            device["transfers"] = rows or []

        sustained_sides: dict[str, DispatchSide] = {}
        if ours is not None and direct is not None:
            sustained_sides["ours"] = ours
            sustained_sides["provider-direct"] = direct
        if raw is not None and wanted & {"round_trip", "sustained"}:
            if target.api == "opencl":
                from .raw_opencl import RawOpenCL

                assert isinstance(raw, RawOpenCL)
                sustained_sides["raw"] = raw.dispatch_side(gated=False)
                sustained_sides["raw-gated"] = raw.dispatch_side(gated=True)
            else:
                from .raw_vulkan import RawVulkan

                assert isinstance(raw, RawVulkan)
                raw_dispatch = _guard(device, "raw dispatch setup", log, raw.dispatch_side)
                if raw_dispatch is not None:
                    sustained_sides["raw"] = raw_dispatch
                    _closing(stack, device, "raw dispatch", log, raw_dispatch.close)
        sides: dict[str, RoundTripSide] = dict(sustained_sides)  # the same sides, in the same turn order
        if raw is not None and "raw" in sustained_sides:
            # raw-poll: the raw calls waited on the way our layer waits (flush + busy poll), round trips only.
            if target.api == "opencl":
                from .raw_opencl import RawOpenCL

                assert isinstance(raw, RawOpenCL)
                sides["raw-poll"] = raw.dispatch_side(gated=False, polled=True)
            else:
                from .raw_vulkan import RawVulkanDispatch

                raw_side = sustained_sides["raw"]
                assert isinstance(raw_side, RawVulkanDispatch)
                sides["raw-poll"] = raw_side.polled()
        if target.api == "vulkan" and "round_trip" in wanted:
            from .peer_wgpu import WgpuPeer

            peer = _guard(device, "wgpu peer", log, lambda: WgpuPeer(target.name))
            if peer is not None:
                _closing(stack, device, "wgpu", log, peer.close)
                sides["wgpu"] = peer
                device["notes"].append(f"wgpu waits with {peer.wait_method}")
        if "round_trip" in wanted:
            device["round_trip"] = (
                _guard(device, "round trip", log, lambda: dispatch.round_trips(config, sides, log)) or {}
            )
        if "sustained" in wanted:
            groups = _guard(device, "sustained", log, lambda: dispatch.sustained_groups(config, sustained_sides, log))
            groups = groups or {}
            device["sustained_in_flight"] = groups
            device["sustained"] = groups.get(str(config.window), {})  # the headline group (plots, targets)
            device["sustained_window"] = _provider_window(target, ours)

        if "overhead" not in wanted:
            pass
        elif ours is not None and direct is not None:
            device["overhead"] = (
                _guard(device, "engine overhead", log, lambda: engine_overhead(config, ours, direct)) or {}
            )
        else:
            device["overhead"] = {"not_measured": device["ours_status"]}
        if "program_load" in wanted:
            device["program_load"] = (
                _guard(device, "program load", log, lambda: _program_loads(target, ours, direct, raw, config)) or {}
            )
        family, entry = target.family, target.entry
        if "reload_arguments" in wanted:
            # Ours on a fresh provider instance of its own (only when ours could be opened at all).
            ours_family = family if ours is not None else None
            device["reload_arguments"] = (
                _guard(
                    device,
                    "re-load with changed arguments",
                    log,
                    lambda: reload_arguments.measure_device(target.api, ours_family, entry, raw, config),
                )
                or {}
            )
        if "highlevel" in wanted:
            # Ours as a user of accelcore.api on a fresh provider instance; the peer: PyOpenCL on the
            # same cl.Device (OpenCL), wgpu-py on the adapter of the same name (Vulkan).
            native = getattr(raw, "device", None) if target.api == "opencl" else target.name
            device["highlevel"] = (
                _guard(
                    device,
                    "high-level call",
                    log,
                    lambda: highlevel_call.measure_device(
                        target.api,
                        family if ours is not None else None,
                        entry,
                        native,
                        highlevel_call.settings_for(config.quick),
                        log,
                    ),
                )
                or {}
            )
        if "copy_freedom" not in wanted:
            pass
        elif ours is not None:
            device["copy_freedom"] = (
                _guard(device, "copy-freedom", log, lambda: _copy_freedom(config, ours, arrays)) or {}
            )
        else:
            device["copy_freedom"] = {"ours": {"not_measured": device["ours_status"]}}
        if (
            "overhead" in wanted
            and ours is not None
            and direct is not None
            and family is not None
            and entry is not None
            and "engine_submit" in device["overhead"]
        ):
            hooks = _guard(device, "conformance hooks", log, lambda: family.conformance(entry).hooks)
            if hooks is not None:
                in_call = _guard(
                    device,
                    "engine overhead (in-call)",
                    log,
                    lambda: in_call_overhead(config, family, entry, _module_kind(target.api), hooks),
                )
                if in_call:
                    device["overhead"].update(in_call)
                # Last: hold mode cannot be switched off again on these instances.
                pending = _guard(
                    device, "poll overhead (pending)", log, lambda: pending_poll_overhead(config, ours, direct, hooks)
                )
                if pending:
                    device["overhead"].update(pending)
    return device


@contextlib.contextmanager
def _private_compile_cache() -> Iterator[str]:
    """Point ``ACCELCORE_CACHE_DIR`` at a temporary folder for the run (unless the caller set it),
    so cold loads of unique modules do not litter the user's cache; restored afterwards."""
    if "ACCELCORE_CACHE_DIR" in os.environ:
        yield os.environ["ACCELCORE_CACHE_DIR"]
        return
    with tempfile.TemporaryDirectory(prefix="accel-bench-cache-") as folder:
        os.environ["ACCELCORE_CACHE_DIR"] = folder
        try:
            yield folder
        finally:
            os.environ.pop("ACCELCORE_CACHE_DIR", None)


def run(
    devices: Sequence[str | DeviceEntry] | None = None,
    json_path: str | Path | None = DEFAULT_JSON,
    plot_dir: str | Path | None = None,
    quick: bool = False,
    *,
    families: Mapping[str, ProviderFamily | ProviderUnavailable] | None = None,
    notes: Sequence[str] = (),
    log: Log = _stderr,
    items: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Benchmark ``devices`` (None: every OpenCL and Vulkan device), write the JSON to ``json_path``
    and ``results.md`` + PNGs to ``plot_dir`` (default: the JSON's folder). Returns the document.

    The OpenCL provider's on-disk compile cache points at a temporary folder for the run
    (unless ``ACCELCORE_CACHE_DIR`` is set): cold loads compile unique modules that would
    otherwise litter the user's cache. ``families``: provider families by name (default: the
    installed entry points); ``notes``: lines recorded in the JSON and shown at the top of the
    table (e.g. the state of the machine). ``items``: only these of :data:`ITEMS` (default: all); such a
    partial run records them as ``items`` and its table is ``<json stem>.md``, never ``results.md``.
    """
    unknown = sorted(set(items or ()) - set(ITEMS))
    if unknown:
        raise ValueError(f"unknown benchmark item(s) {', '.join(unknown)}; the items are {', '.join(ITEMS)}")
    partial = items is not None and set(items) != set(ITEMS)
    config = Config.quick_mode() if quick else Config.full()
    document: dict[str, Any] = {
        "schema": SCHEMA,
        "machine": machine_facts(),
        "config": config.as_dict(),
        "notes": list(notes),
        "devices": [],
    }
    if partial:
        document["items"] = [item for item in ITEMS if item in set(items or ())]
    targets = find_targets(devices, families)
    needs_arrays = not partial or {"transfers", "copy_freedom"} & set(items or ())
    arrays = transfers.HostArrays(max(max(config.transfer_sizes), config.copyfree_large) if needs_arrays else 1)
    with _private_compile_cache():
        for target in targets:
            document["devices"].append(bench_device(target, config, arrays, log, document.get("items", ITEMS)))
    with contextlib.suppress(OSError):
        document["load_average_at_end"] = list(os.getloadavg())
    document = json.loads(json.dumps(document))  # exactly what the file holds (tuples become lists)
    if json_path is not None:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        regenerate(path, plot_dir if plot_dir is not None else path.parent)
    return document
