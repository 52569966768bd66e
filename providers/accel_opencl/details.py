"""An OpenCL device at clinfo depth: every ``CL_DEVICE_*`` a tuning user reads, in clinfo's sections.

Promise: :func:`device_details` asks the driver each question once (``clGetDeviceInfo`` /
``clGetPlatformInfo`` through pyopencl, the extension queries pyopencl has no name for through
the ICD loader: :mod:`accel_opencl.icd`) and returns :class:`~accelcore.devices.native_facts.DeviceDetails`.
A query the driver refuses (an OpenCL 3.0 query on an older device, an extension query on a device
without the extension) is a fact with no value and the driver's status as the reason, never an
exception and never a missing key. Values keep the driver's units, named in the keys: bytes, MHz,
ns, bits, pixels; bit fields are decoded to clinfo's flag names (``denorm``, ``inf_nan``, ``fma``).
Nothing here opens a context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from accelcore.devices.native_facts import DeviceDetails, Fact, FactSection

from . import icd
from .discovery import NativeDevice, load_pyopencl

__all__ = ["FP_CONFIG_FLAGS", "device_details"]

FP_CONFIG_FLAGS = (
    "denorm",
    "inf_nan",
    "round_to_nearest",
    "round_to_zero",
    "round_to_inf",
    "fma",
    "soft_float",
    "correctly_rounded_divide_sqrt",
)
"""``CL_FP_DENORM`` (bit 0) .. ``CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT`` (bit 7), as clinfo names them."""
_DEVICE_TYPES = ("default", "CPU", "GPU", "accelerator", "custom")
_EXEC_CAPABILITIES = ("kernel", "native_kernel")
_SVM_CAPABILITIES = ("coarse_grain_buffer", "fine_grain_buffer", "fine_grain_system", "atomics")
_CACHE_TYPES = {0: "none", 1: "read_only", 2: "read_write"}
_LOCAL_MEM_TYPES = {0: "none", 1: "local", 2: "global"}
_VECTOR_TYPES = ("char", "short", "int", "long", "half", "float", "double")

# Extension and 3.0 queries pyopencl has no name for (cl_ext.h, cl.h).
CL_DEVICE_IMAGE_PITCH_ALIGNMENT = 0x104A
CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT = 0x104B
CL_DEVICE_UUID_KHR = 0x106A
CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED = 0x1072
CL_DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108
CL_PLATFORM_ICD_SUFFIX_KHR = 0x0920


def _flags(value: int, names: Sequence[str]) -> list[str]:
    """The names of the set bits (bit i = names[i]); an unknown bit as its hex value."""
    found = [name for bit, name in enumerate(names) if value >> bit & 1]
    unknown = value & ~((1 << len(names)) - 1)
    if unknown:
        found.append(f"{unknown:#x}")
    return found


def _device_query(name: str) -> str:
    """The C name of pyopencl's ``device_info.<name>`` (``DRIVER_VERSION`` is ``CL_DRIVER_VERSION``)."""
    return "CL_DRIVER_VERSION" if name == "DRIVER_VERSION" else f"CL_DEVICE_{name}"


def _uuid_text(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" if len(h) == 32 else h


class _Reader:
    """Asks one device (and its platform) and turns each answer, or refusal, into a Fact."""

    def __init__(self, native: NativeDevice) -> None:
        self.cl = load_pyopencl()
        self.device = native.device
        self.platform = native.platform
        self.extensions = set(str(self.raw("EXTENSIONS").value or "").split())

    def raw(self, name: str) -> icd.Answer:
        """pyopencl's answer to ``CL_DEVICE_<name>`` (or the driver's status as the reason)."""
        return self._ask(self.device, self.cl.device_info, name, "clGetDeviceInfo", _device_query(name))

    def _platform_raw(self, name: str) -> icd.Answer:
        return self._ask(self.platform, self.cl.platform_info, name, "clGetPlatformInfo", f"CL_PLATFORM_{name}")

    def _ask(self, handle: Any, table: Any, name: str, call: str, query: str) -> icd.Answer:
        param = getattr(table, name, None)
        if param is None:
            return icd.Answer(None, f"this pyopencl has no name for {query}")
        try:
            return icd.Answer(handle.get_info(param))
        except self.cl.Error as exc:
            code = getattr(exc, "code", None)
            status = icd.status_name(code) if isinstance(code, int) else str(exc)
            return icd.Answer(None, f"{call}({query}) returned {status}")

    def fact(
        self,
        key: str,
        label: str,
        name: str,
        *,
        unit: str = "",
        layout: str = "",
        convert: Callable[[Any], Any] = lambda v: v,
    ) -> Fact:
        """The fact of ``CL_DEVICE_<name>``."""
        answer = self.raw(name)
        value = convert(answer.value) if answer.value is not None else None
        return Fact(key, label, value, _device_query(name), unit, answer.reason, layout)

    def platform_fact(self, key: str, label: str, name: str, *, layout: str = "", convert: Any = None) -> Fact:
        answer = self._platform_raw(name)
        value = (convert or _text)(answer.value) if answer.value is not None else None
        return Fact(key, label, value, f"CL_PLATFORM_{name}", "", answer.reason, layout)

    def extension_fact(
        self, key: str, label: str, answer: icd.Answer, query: str, extension: str = "", *, unit: str = ""
    ) -> Fact:
        """A fact from an ICD-loader query; a refusal on a device without ``extension`` says it lacks it."""
        reason = answer.reason
        if answer.value is None and extension and extension not in self.extensions:
            reason = f"{reason} (the device does not offer {extension})"
        return Fact(key, label, answer.value, query, unit, reason)

    def group(self, key: str, label: str, names: Sequence[str], query: str, *, unit: str = "") -> Fact:
        """One fact from several queries (a vector width per type); not reported when any is refused."""
        values: dict[str, Any] = {}
        for suffix, name in zip(_VECTOR_TYPES, names, strict=True):
            answer = self.raw(name)
            if answer.value is None:
                return Fact(key, label, None, query, unit, answer.reason)
            values[suffix] = int(answer.value)
        return Fact(key, label, values, query, unit)


def _text(value: Any) -> str:
    return str(value).strip()


def _device(r: _Reader) -> FactSection:
    uuid = icd.device_bytes(r.device, CL_DEVICE_UUID_KHR, "CL_DEVICE_UUID_KHR")
    uuid_value = icd.Answer(_uuid_text(bytes(uuid.value))) if uuid.value is not None else uuid
    conformance = icd.device_text(
        r.device, CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED, "CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED"
    )
    return FactSection(
        "device",
        "Device",
        (
            r.fact("name", "name", "NAME", convert=_text),
            r.fact("vendor", "vendor", "VENDOR", convert=_text),
            r.fact("vendor_id", "vendor id", "VENDOR_ID", convert=int),
            r.fact("type", "type", "TYPE", convert=lambda v: _flags(int(v), _DEVICE_TYPES)),
            r.fact("version", "version", "VERSION", convert=_text),
            r.fact("driver_version", "driver version", "DRIVER_VERSION", convert=_text),
            r.fact("opencl_c_version", "OpenCL C version", "OPENCL_C_VERSION", convert=_text),
            r.fact("il_version", "IL version", "IL_VERSION", convert=_text),
            r.fact("profile", "profile", "PROFILE", convert=_text),
            r.extension_fact("uuid", "UUID", uuid_value, "CL_DEVICE_UUID_KHR", "cl_khr_device_uuid"),
            r.extension_fact(
                "latest_conformance_version_passed",
                "latest conformance passed",
                conformance,
                "CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED",
            ),
            r.fact("available", "available", "AVAILABLE", convert=bool),
            r.fact("compiler_available", "compiler available", "COMPILER_AVAILABLE", convert=bool),
            r.fact("linker_available", "linker available", "LINKER_AVAILABLE", convert=bool),
            r.fact("address_bits", "address bits", "ADDRESS_BITS", convert=int, unit="bits"),
            r.fact("endian_little", "little-endian", "ENDIAN_LITTLE", convert=bool),
        ),
    )


def _compute(r: _Reader) -> FactSection:
    widths = [f"PREFERRED_VECTOR_WIDTH_{t.upper()}" for t in _VECTOR_TYPES]
    natives = [f"NATIVE_VECTOR_WIDTH_{t.upper()}" for t in _VECTOR_TYPES]
    return FactSection(
        "compute",
        "Compute",
        (
            r.fact("max_clock_mhz", "max clock", "MAX_CLOCK_FREQUENCY", convert=int, unit="MHz"),
            r.fact("compute_units", "compute units", "MAX_COMPUTE_UNITS", convert=int),
            r.fact("max_work_item_dimensions", "max work-item dimensions", "MAX_WORK_ITEM_DIMENSIONS", convert=int),
            r.fact(
                "max_work_item_sizes",
                "max work-item sizes",
                "MAX_WORK_ITEM_SIZES",
                convert=lambda v: [int(x) for x in v],
                layout="axes",
            ),
            r.fact("max_work_group_size", "max work-group size", "MAX_WORK_GROUP_SIZE", convert=int),
            r.fact(
                "preferred_work_group_size_multiple",
                "preferred work-group size multiple",
                "PREFERRED_WORK_GROUP_SIZE_MULTIPLE",
                convert=int,
            ),
            r.fact("max_parameter_bytes", "max kernel arguments size", "MAX_PARAMETER_SIZE", convert=int, unit="bytes"),
            r.group("preferred_vector_widths", "preferred vector widths", widths, "CL_DEVICE_PREFERRED_VECTOR_WIDTH_*"),
            r.group("native_vector_widths", "native vector widths", natives, "CL_DEVICE_NATIVE_VECTOR_WIDTH_*"),
            r.fact(
                "execution_capabilities",
                "execution capabilities",
                "EXECUTION_CAPABILITIES",
                convert=lambda v: _flags(int(v), _EXEC_CAPABILITIES),
            ),
            r.fact(
                "non_uniform_work_group_support",
                "non-uniform work-groups",
                "NON_UNIFORM_WORK_GROUP_SUPPORT",
                convert=bool,
            ),
            r.fact(
                "work_group_collective_functions_support",
                "work-group collective functions",
                "WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT",
                convert=bool,
            ),
            r.fact(
                "profiling_timer_resolution_ns",
                "profiling timer resolution",
                "PROFILING_TIMER_RESOLUTION",
                convert=int,
                unit="ns",
            ),
        ),
    )


def _subgroups(r: _Reader) -> FactSection:
    sizes = icd.device_sizes(r.device, CL_DEVICE_SUB_GROUP_SIZES_INTEL, "CL_DEVICE_SUB_GROUP_SIZES_INTEL")
    return FactSection(
        "subgroups",
        "Subgroups",
        (
            r.fact("max_num_sub_groups", "max sub-groups per work-group", "MAX_NUM_SUB_GROUPS", convert=int),
            r.extension_fact(
                "sub_group_sizes",
                "sub-group sizes",
                sizes,
                "CL_DEVICE_SUB_GROUP_SIZES_INTEL",
                "cl_intel_required_subgroup_size",
            ),
            r.fact(
                "sub_group_independent_forward_progress",
                "independent forward progress",
                "SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS",
                convert=bool,
            ),
        ),
    )


def _memory(r: _Reader) -> FactSection:
    return FactSection(
        "memory",
        "Memory",
        (
            r.fact("global_memory_bytes", "global memory", "GLOBAL_MEM_SIZE", convert=int, unit="bytes"),
            r.fact("max_mem_alloc_bytes", "max allocation", "MAX_MEM_ALLOC_SIZE", convert=int, unit="bytes"),
            r.fact(
                "global_mem_cache_type",
                "global memory cache type",
                "GLOBAL_MEM_CACHE_TYPE",
                convert=lambda v: _CACHE_TYPES.get(int(v), f"{int(v):#x}"),
            ),
            r.fact("global_mem_cache_bytes", "global memory cache", "GLOBAL_MEM_CACHE_SIZE", convert=int, unit="bytes"),
            r.fact(
                "global_mem_cacheline_bytes",
                "global memory cache line",
                "GLOBAL_MEM_CACHELINE_SIZE",
                convert=int,
                unit="bytes",
            ),
            r.fact(
                "local_mem_type",
                "local memory type",
                "LOCAL_MEM_TYPE",
                convert=lambda v: _LOCAL_MEM_TYPES.get(int(v), f"{int(v):#x}"),
            ),
            r.fact("local_memory_bytes", "local memory", "LOCAL_MEM_SIZE", convert=int, unit="bytes"),
            r.fact(
                "max_constant_buffer_bytes",
                "max constant buffer",
                "MAX_CONSTANT_BUFFER_SIZE",
                convert=int,
                unit="bytes",
            ),
            r.fact("max_constant_args", "max constant arguments", "MAX_CONSTANT_ARGS", convert=int),
            r.fact(
                "max_global_variable_bytes",
                "max global variable",
                "MAX_GLOBAL_VARIABLE_SIZE",
                convert=int,
                unit="bytes",
            ),
            r.fact(
                "mem_base_addr_align_bits", "base address alignment", "MEM_BASE_ADDR_ALIGN", convert=int, unit="bits"
            ),
            r.fact(
                "min_data_type_align_bytes",
                "min data type alignment",
                "MIN_DATA_TYPE_ALIGN_SIZE",
                convert=int,
                unit="bytes",
            ),
            r.fact("host_unified_memory", "unified with host", "HOST_UNIFIED_MEMORY", convert=bool),
            r.fact("error_correction_support", "error correction", "ERROR_CORRECTION_SUPPORT", convert=bool),
            r.fact(
                "svm_capabilities",
                "SVM capabilities",
                "SVM_CAPABILITIES",
                convert=lambda v: _flags(int(v), _SVM_CAPABILITIES),
            ),
        ),
    )


def _images(r: _Reader) -> FactSection:
    pitch = icd.device_uint(r.device, CL_DEVICE_IMAGE_PITCH_ALIGNMENT, "CL_DEVICE_IMAGE_PITCH_ALIGNMENT")
    base = icd.device_uint(r.device, CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT, "CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT")
    return FactSection(
        "images",
        "Images",
        (
            r.fact("image_support", "image support", "IMAGE_SUPPORT", convert=bool),
            r.fact("max_samplers", "max samplers per kernel", "MAX_SAMPLERS", convert=int),
            _size_fact(r, "image2d_max_pixels", "max 2D image size", ("IMAGE2D_MAX_WIDTH", "IMAGE2D_MAX_HEIGHT")),
            _size_fact(
                r,
                "image3d_max_pixels",
                "max 3D image size",
                ("IMAGE3D_MAX_WIDTH", "IMAGE3D_MAX_HEIGHT", "IMAGE3D_MAX_DEPTH"),
            ),
            r.fact(
                "image_max_buffer_pixels",
                "max 1D image from buffer",
                "IMAGE_MAX_BUFFER_SIZE",
                convert=int,
                unit="pixels",
            ),
            r.fact("image_max_array_size", "max image array size", "IMAGE_MAX_ARRAY_SIZE", convert=int, unit="images"),
            r.fact("max_read_image_args", "max read image arguments", "MAX_READ_IMAGE_ARGS", convert=int),
            r.fact("max_write_image_args", "max write image arguments", "MAX_WRITE_IMAGE_ARGS", convert=int),
            r.fact(
                "max_read_write_image_args",
                "max read/write image arguments",
                "MAX_READ_WRITE_IMAGE_ARGS",
                convert=int,
            ),
            r.extension_fact(
                "image_pitch_alignment_pixels",
                "pitch alignment (2D from buffer)",
                pitch,
                "CL_DEVICE_IMAGE_PITCH_ALIGNMENT",
                unit="pixels",
            ),
            r.extension_fact(
                "image_base_address_alignment_pixels",
                "base address alignment (2D from buffer)",
                base,
                "CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT",
                unit="pixels",
            ),
        ),
    )


def _size_fact(r: _Reader, key: str, label: str, names: Sequence[str]) -> Fact:
    values = []
    for name in names:
        answer = r.raw(name)
        if answer.value is None:
            return Fact(key, label, None, ", ".join(f"CL_DEVICE_{n}" for n in names), "pixels", answer.reason)
        values.append(int(answer.value))
    return Fact(key, label, values, ", ".join(f"CL_DEVICE_{n}" for n in names), "pixels", layout="axes")


def _floating_point(r: _Reader) -> FactSection:
    def config(value: Any) -> list[str]:
        return _flags(int(value), FP_CONFIG_FLAGS)

    return FactSection(
        "floating_point",
        "Floating point",
        (
            r.fact("half_fp_config", "half (fp16)", "HALF_FP_CONFIG", convert=config),
            r.fact("single_fp_config", "single (fp32)", "SINGLE_FP_CONFIG", convert=config),
            r.fact("double_fp_config", "double (fp64)", "DOUBLE_FP_CONFIG", convert=config),
        ),
    )


def _extensions(r: _Reader) -> FactSection:
    return FactSection(
        "extensions",
        "Extensions",
        (r.fact("device", "device", "EXTENSIONS", convert=lambda v: sorted(set(str(v).split())), layout="lines"),),
    )


def _platform(r: _Reader) -> FactSection:
    suffix = icd.platform_text(r.platform, CL_PLATFORM_ICD_SUFFIX_KHR, "CL_PLATFORM_ICD_SUFFIX_KHR")
    library = icd.icd_library(r.platform)
    vendors_file = icd.icd_file(library.value) if library.value is not None else library
    loader = icd.loader_info()
    return FactSection(
        "platform",
        "Platform / ICD",
        (
            r.platform_fact("name", "name", "NAME"),
            r.platform_fact("vendor", "vendor", "VENDOR"),
            r.platform_fact("version", "version", "VERSION"),
            r.platform_fact("profile", "profile", "PROFILE"),
            r.platform_fact(
                "extensions", "extensions", "EXTENSIONS", layout="lines", convert=lambda v: sorted(set(str(v).split()))
            ),
            Fact("icd_suffix", "ICD function suffix", suffix.value, "CL_PLATFORM_ICD_SUFFIX_KHR", reason=suffix.reason),
            Fact("icd_library", "ICD library", library.value, "dladdr(clGetPlatformInfo)", reason=library.reason),
            Fact("icd_file", "ICD vendors file", vendors_file.value, "OCL_ICD_VENDORS", reason=vendors_file.reason),
            Fact("icd_loader_library", "ICD loader", loader["path"].value, "", reason=loader["path"].reason),
            Fact(
                "icd_loader_name",
                "ICD loader name",
                loader["name"].value,
                "CL_ICDL_NAME",
                reason=loader["name"].reason,
            ),
            Fact(
                "icd_loader_vendor",
                "ICD loader vendor",
                loader["vendor"].value,
                "CL_ICDL_VENDOR",
                reason=loader["vendor"].reason,
            ),
            Fact(
                "icd_loader_version",
                "ICD loader version",
                loader["version"].value,
                "CL_ICDL_VERSION",
                reason=loader["version"].reason,
            ),
            Fact(
                "icd_loader_opencl_version",
                "ICD loader OpenCL version",
                loader["ocl_version"].value,
                "CL_ICDL_OCL_VERSION",
                reason=loader["ocl_version"].reason,
            ),
        ),
    )


def device_details(native: NativeDevice) -> DeviceDetails:
    """Every section of one device's facts (clGetDeviceInfo / clGetPlatformInfo, read now)."""
    reader = _Reader(native)
    pyopencl_version = ".".join(str(part) for part in reader.cl.VERSION)
    return DeviceDetails(
        source=(
            f"clGetDeviceInfo / clGetPlatformInfo through pyopencl {pyopencl_version}; extension queries through "
            "the ICD loader"
        ),
        sections=(
            _device(reader),
            _compute(reader),
            _memory(reader),
            _images(reader),
            _floating_point(reader),
            _subgroups(reader),
            _extensions(reader),
            _platform(reader),
        ),
    )
