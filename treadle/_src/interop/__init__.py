"""Zero-copy interop with other array libraries.

- ``dlpack``: the DLPack protocol (``array.__dlpack__``, ``from_dlpack``, ``to_dlpack``), the common transport;
- ``torch``, ``jax``, ``paddle``: conversions, dtype/device/stream maps (each library is imported on first use);
- ``common``: the shared error class and the rules for viewing foreign data with vector/matrix element types.

NumPy needs no module here: arrays implement ``__array_interface__`` and ``from_numpy`` lives with array creation.

The array class's own protocols (``__dlpack__``, ``__cuda_array_interface__``) are implemented here: importing this
package registers them with ``lang/array.py``, and ``foreign``'s conversions of foreign launch arguments
with ``backends/args.py``.
"""

from . import cuda_interface as cuda_interface
from . import dlpack as dlpack
from . import foreign as foreign
