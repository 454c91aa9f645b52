"""GPU kernels (Triton). Like ``kernels/cpu``, everything here trusts its inputs: validation happens in
``scatterx.ops`` (``backends/gpu/`` launches these kernels).

Triton is optional: ``available()`` says whether it imports. With ``TRITON_INTERPRET=1`` the same kernels run on
CPU tensors through Triton's interpreter, which is how CI tests them on machines without a GPU.
"""

import functools
import os


@functools.cache
def available() -> bool:
    """Whether Triton imports (the kernels modules of this package need it)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (``TRITON_INTERPRET=1``, read when a kernel is defined)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"
