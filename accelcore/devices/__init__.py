"""Layer 5, devices: how devices are found and named.

Owns: the selector grammar (``selector``), provider families registered as entry points
(``registry``), the inventory of every family's devices (``inventory``), environment defaults set
before any driver enumerates (``environment``), the OpenCL ICD loader's vendors folder of this checkout
(``opencl_vendors``) and the facts a driver reports about a device (``native_facts``).

May import: :mod:`accelcore.contract`, :mod:`accelcore.support` (and, for annotations only, the
conformance layer's types). Importing it imports no driver (docs/architecture.md).
"""
