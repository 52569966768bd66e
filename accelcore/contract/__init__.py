"""Layer 1, the contract: the seed's items and nothing else (virtio-accel-core's ``Accelerator`` trait,
protocol 1.0; ../shared/seeds and ../shared/SPEC.md).

Owns: value types with validating constructors (``device``, ``buffers``, ``program``, ``submission``),
flags and access rules (``flags``), the one error vocabulary (``errors``), zero-copy byte ports (``ports``),
the ``Accelerator`` protocol (``accelerator``), the wording of refusals every provider shares
(``refusals``), the one host-side wait (``waiting``) and the small number checks they share (``_checks``).

May import: the standard library only - no other layer of accelcore, no driver. Every layer above
imports this one (docs/architecture.md).
"""
