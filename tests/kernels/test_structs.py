"""@wp.struct in kernels: arguments, nested structs, arrays inside structs, arrays of structs, construction, returns."""

from __future__ import annotations

import numpy as np

import treadle as wp


@wp.struct
class Inner:
    scale: float
    offset: wp.vec3


@wp.struct
class Params:
    inner: Inner
    count: int
    weights: wp.array(dtype=float)
    m: wp.mat22


@wp.struct
class Particle:
    pos: wp.vec3
    vel: wp.vec3
    mass: float
    alive: wp.int32


@wp.func
def make_inner(s: float) -> Inner:
    r = Inner()
    r.scale = s
    r.offset = wp.vec3(s, 2.0 * s, 3.0 * s)
    return r


@wp.kernel
def use_params(p: Params, out: wp.array(dtype=wp.vec3), outs: wp.array(dtype=float)):
    i = wp.tid()
    w = p.weights[i]
    out[i] = p.inner.offset * (p.inner.scale * w) + wp.vec3(float(p.count))
    outs[i] = p.m[0, 1] + p.m[1, 0]


@wp.kernel
def step_particles(ps: wp.array(dtype=Particle), dt: float):
    i = wp.tid()
    p = ps[i]
    if p.alive == 0:
        return
    p.vel = p.vel + wp.vec3(0.0, -9.8, 0.0) * dt
    p.pos = p.pos + p.vel * dt
    ps[i] = p
    ps[i].mass = ps[i].mass * 2.0


@wp.kernel
def construct_in_kernel(out: wp.array(dtype=Inner), outp: wp.array(dtype=Particle)):
    i = wp.tid()
    out[i] = make_inner(float(i))
    q = Particle()
    q.pos.y = float(i)
    q.pos[2] = 7.0
    q.mass = 1.5
    outp[i] = q


def test_struct_argument_with_nested_struct_array_and_matrix(device):
    p = Params()
    p.inner.scale = 2.0
    p.inner.offset = wp.vec3(1.0, 0.0, -1.0)
    p.count = 3
    p.weights = wp.array(np.array([1.0, 0.5, 0.25], dtype=np.float32), device=device)
    p.m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    out = wp.zeros(3, dtype=wp.vec3, device=device)
    outs = wp.zeros(3, dtype=float, device=device)
    wp.launch(use_params, dim=3, inputs=[p, out, outs], device=device)
    w = np.array([1.0, 0.5, 0.25])
    np.testing.assert_allclose(out.numpy(), np.outer(2.0 * w, [1.0, 0.0, -1.0]) + 3.0)
    np.testing.assert_allclose(outs.numpy(), [5.0] * 3)


def test_array_of_structs(device):
    n = 4
    ps = wp.zeros(n, dtype=Particle, device=device)
    host = ps.numpy()
    host["vel"][:] = [[1.0, 2.0, 3.0]] * n
    host["mass"][:] = 1.0
    host["alive"][:] = [1, 0, 1, 1]
    ps = wp.array(host, dtype=Particle, device=device)
    wp.launch(step_particles, dim=n, inputs=[ps, 0.5], device=device)
    r = ps.numpy()
    alive = np.array([1, 0, 1, 1], dtype=bool)
    np.testing.assert_allclose(r["vel"][alive], [[1.0, 2.0 - 4.9, 3.0]] * 3, rtol=1e-6)
    np.testing.assert_allclose(r["pos"][alive], 0.5 * r["vel"][alive], rtol=1e-6)
    np.testing.assert_allclose(r["mass"], [2.0, 1.0, 2.0, 2.0])
    np.testing.assert_allclose(r["vel"][1], [1.0, 2.0, 3.0])


def test_struct_construction_and_return(device):
    out = wp.zeros(3, dtype=Inner, device=device)
    outp = wp.zeros(3, dtype=Particle, device=device)
    wp.launch(construct_in_kernel, dim=3, inputs=[out, outp], device=device)
    r = out.numpy()
    np.testing.assert_allclose(r["scale"], [0, 1, 2])
    np.testing.assert_allclose(r["offset"], [[i, 2 * i, 3 * i] for i in range(3)])
    rp = outp.numpy()
    np.testing.assert_allclose(rp["pos"], [[0, i, 7] for i in range(3)])
    np.testing.assert_allclose(rp["mass"], [1.5] * 3)
    assert out.list()[2].scale == 2.0


@wp.struct
class Spring:
    k: wp.float64
    rest: wp.float64


@wp.kernel
def spring_energy(s: wp.array(dtype=Spring), x: wp.array(dtype=wp.float64), e: wp.array(dtype=wp.float64)):
    i = wp.tid()
    sp = s[i]
    d = x[i] - sp.rest
    wp.atomic_add(e, 0, wp.float64(0.5) * sp.k * d * d)


def test_struct_gradients():
    host = np.zeros(2, dtype=Spring.numpy_dtype())
    host["k"] = [2.0, 3.0]
    host["rest"] = [1.0, 0.5]
    s = wp.array(host, dtype=Spring, requires_grad=True)
    x = wp.array(np.array([1.5, 2.0]), dtype=wp.float64, requires_grad=True)
    e = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(spring_energy, dim=2, inputs=[s, x, e])
    tape.backward(e)
    np.testing.assert_allclose(x.grad.numpy(), [2.0 * 0.5, 3.0 * 1.5])
    g = s.grad.numpy()
    np.testing.assert_allclose(g["k"], [0.5 * 0.25, 0.5 * 2.25])
    np.testing.assert_allclose(g["rest"], [-1.0, -4.5])


@wp.struct
class Counter:
    value: float
    v: wp.vec3


@wp.func
def next_index(counter: wp.array(dtype=int)) -> int:
    wp.atomic_add(counter, 0, 1)
    return 0


@wp.kernel
def aug_assign_once(counter: wp.array(dtype=int), data: wp.array(dtype=Counter)):
    data[next_index(counter)].value += 5.0
    data[next_index(counter)].v[1] += 2.0
    data[next_index(counter)].v.z = 7.0


def test_assignment_targets_are_evaluated_once(device):
    counter = wp.zeros(1, dtype=int, device=device)
    data = wp.zeros(1, dtype=Counter, device=device)
    wp.launch(aug_assign_once, dim=1, inputs=[counter, data], device=device)
    assert counter.numpy()[0] == 3
    r = data.numpy()[0]
    assert r["value"] == 5.0
    np.testing.assert_allclose(r["v"], [0.0, 2.0, 7.0])
