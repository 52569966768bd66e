"""Layer 3, kernels: from kernel files to kernel packages.

Owns: the package model and its binary codec (``package``, ``package_codec``), SPIR-V inspection and
specialization (the ``spirv`` package), the OpenCL C front end (Clang's, in a bounded child:
``opencl_signature``, ``_clang_reflect``), includes (``opencl_includes``), GLSL (``glsl``, through
glslang), typed argument values (``values``, ``arguments``), struct and block layouts (``layouts``),
coverage inference (``coverage_inference``), how far a dispatch reaches (``dispatch_extent``) and
``pack_module`` (``pack``).

May import: :mod:`accelcore.contract`, :mod:`accelcore.support`, numpy. Never a driver
(docs/architecture.md).
"""
