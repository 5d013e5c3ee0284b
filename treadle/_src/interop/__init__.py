"""Zero-copy interop with other array libraries.

- ``dlpack``: the DLPack protocol (``array.__dlpack__``, ``from_dlpack``, ``to_dlpack``), the common transport;
- ``torch``, ``jax``, ``paddle``: conversions, dtype/device/stream maps (each library is imported on first use);
- ``common``: the shared error class and the rules for viewing foreign data with vector/matrix element types.

NumPy needs no module here: arrays implement ``__array_interface__`` and ``from_numpy`` lives with array creation.
"""
