"""The check the tile error tests share: building a kernel fails with a message that points at the user's line."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

import treadle as wp
from treadle._src.core.errors import CodegenError


def assert_error_at_line(fn: Callable[..., Any], message: str, line_text: str, inputs: list[Any],
                         module: str) -> None:
    """Launching ``fn`` as a tiled kernel raises a CodegenError matching ``message`` that quotes ``line_text``."""
    k = wp.kernel(fn, module=f"{module}_{fn.__name__}")
    with pytest.raises(CodegenError, match=message) as info:
        wp.launch_tiled(k, dim=1, inputs=inputs, block_dim=8)
    text = str(info.value)
    assert os.path.basename(fn.__code__.co_filename) in text and line_text in text
