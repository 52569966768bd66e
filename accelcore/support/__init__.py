"""Layer 2, support: host-process helpers that every layer above the contract uses.

Owns: files read and written without following into special files, with size caps and atomic
replacement (``files``); child processes that end with their parent and get a clean environment
(``child``); numeric limits read from the environment (``limits``); plain-text wording helpers (``text``); bounded
memos that keep the newest entries (``recent``).

May import: :mod:`accelcore.contract` (its errors) and the standard library (docs/architecture.md).
"""
