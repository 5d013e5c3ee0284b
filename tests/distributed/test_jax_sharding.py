"""jax_kernel / jax_callable inside ``jax.shard_map`` and ``jax.pmap`` over 4 host CPU devices.

JAX fixes its device count when it is first imported, so the checks run in a subprocess
(``jax_sharding_worker.py``) started with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``; it runs them all
once and reports per check. Each check compares the sharded result (forward, vmap, gradients) with the same call
on one device and with a NumPy / ``jax.numpy`` reference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
if not hasattr(jax, "ffi"):
    pytest.skip("this JAX has no jax.ffi", allow_module_level=True)

WORKER = Path(__file__).with_name("jax_sharding_worker.py")
ROOT = Path(__file__).resolve().parents[2]

CHECKS = [
    "forward",
    "result_varies_over_the_mesh",
    "shard_offset_as_array",
    "sharded_input_without_shard_map",
    "vectors_two_outputs",
    "2d_rows_and_atomics",
    "in_out",
    "grad_sharded",
    "grad_replicated_input",
    "vmap_inside_shard_map",
    "shard_map_inside_vmap",
    "callable",
    "callable_zero_copy_per_shard",
    "concurrent_shards_stress",
    "generic_kernel_compiled_in_callbacks",
    "explicit_mesh",
    "pmap",
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("jax_sharding") / "results.json"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, str(WORKER), str(out)], capture_output=True, text=True,
                          env=env, cwd=str(ROOT))
    if proc.returncode != 0 or not out.exists():
        pytest.fail(f"the sharding worker failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(out.read_text())


def test_worker_runs_every_check(results: dict[str, str]) -> None:
    assert sorted(k for k in results if not k.startswith("_")) == sorted(CHECKS)


@pytest.mark.parametrize("check", CHECKS)
def test_sharded(results: dict[str, str], check: str) -> None:
    r = results[check]
    if r.startswith("skip: "):
        pytest.skip(r[len("skip: "):])
    assert r == "ok", r
