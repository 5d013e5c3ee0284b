"""Renderers for looking at simulation results: USD stages (``UsdRenderer``) and OpenGL (``OpenGLRenderer``).

Neither renderer is imported by ``import treadle``; ``treadle.render`` loads them on first use, and each imports
its optional dependency (``usd-core``, ``pyglet``) only when it is constructed.
"""
