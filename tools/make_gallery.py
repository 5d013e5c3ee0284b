"""Render the pictures of the documentation's gallery page from the gallery examples.

Each entry of :data:`GALLERY` names an example module of ``treadle/examples`` and the command-line arguments it is
run with. The script runs ``python -m treadle.examples.NAME --out TMP ARGS...`` in a fresh process, turns the PNG
frames it writes into one small animated GIF (or a PNG for a single frame) under ``docs/_static/gallery/``, and
records in ``docs/_static/gallery/manifest.json`` the command, the SHA-256 of the example's source and the image.
The documentation build and ``tests/test_docs.py`` fail (:func:`stale_entries`) when an example's source no longer
matches its manifest entry, when a module of ``treadle/examples`` that writes frames (``--out``) is missing from
:data:`GALLERY`, or when an image is missing or too large; the gallery page (``docs/gallery.md``) is built from the
list and the manifest.

Usage::

    python tools/make_gallery.py             # every example whose source changed since its image was made
    python tools/make_gallery.py --all       # every example
    python tools/make_gallery.py dem cloth   # the named ones

Needs Pillow (``pip install -e ".[docs]"``). To add an example to the gallery, append an entry to
:data:`GALLERY` and run the script for it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "docs" / "_static" / "gallery"
MANIFEST = OUT_DIR / "manifest.json"
#: Largest image the gallery keeps (bytes); the script shrinks the picture until it fits.
MAX_BYTES = 200_000

#: The gallery: example module, its arguments, a title and a caption, in page order.
GALLERY: list[dict[str, Any]] = [
    {"name": "dem", "args": ["--frames", "8", "--size", "240"],
     "title": "Discrete elements",
     "caption": "2,500 spheres fall into a box and pile up; contacts come from a wp.HashGrid rebuilt every step."},
    {"name": "sph", "args": ["--frames", "8", "--size", "240"],
     "title": "Smoothed-particle hydrodynamics",
     "caption": "A water column collapses (position-based SPH with hash-grid neighbour queries)."},
    {"name": "cloth", "args": ["--frames", "8", "--size", "240"],
     "title": "Cloth",
     "caption": "A spring-mass cloth drapes over a sphere; frames are ray-cast with wp.Mesh queries."},
    {"name": "cantilever", "args": ["--size", "480"],
     "title": "Linear elasticity (treadle.fem)",
     "caption": "A clamped beam bends under an end load (degree-2 elements, Dirichlet projection, CG), coloured by "
                "von Mises stress; its tip deflection matches Euler-Bernoulli beam theory."},
    {"name": "raycast", "args": ["--frames", "8", "--size", "240"],
     "title": "Ray casting",
     "caption": "A knot rendered with wp.mesh_query_ray and shadow rays, checked against brute force."},
    {"name": "marching_cubes", "args": ["--frames", "8", "--size", "240"],
     "title": "Marching cubes",
     "caption": "wp.MarchingCubes extracts a torus from its signed distance field (watertight, exported as OBJ/PLY)."},
    {"name": "isosurface", "args": ["--frames", "8", "--size", "240"],
     "title": "Iso-surfaces and swept volumes",
     "caption": "treadle.geometry: a torus by marching cubes, surface nets and sparse marching cubes, and the capsule "
                "a moving sphere sweeps."},
    {"name": "nanovdb_raymarch", "args": ["--frames", "8", "--size", "240"],
     "title": "NanoVDB level set",
     "caption": "A torus level set written to a NanoVDB file, read back as a wp.Volume and sphere-traced with "
                "volume_sample."},
]


def source_path(name: str) -> Path:
    """The source file of gallery example ``name``."""
    return ROOT / "treadle" / "examples" / f"{name}.py"


def source_hash(name: str) -> str:
    """SHA-256 of the example's source file (the manifest records it to tell when an image is stale)."""
    return hashlib.sha256(source_path(name).read_bytes()).hexdigest()


def command(entry: dict[str, Any]) -> str:
    """The command that writes the example's frames, as shown on the gallery page."""
    return " ".join(["python", "-m", f"treadle.examples.{entry['name']}", "--out", f"out/{entry['name']}",
                     *entry["args"]])


def load_manifest() -> dict[str, Any]:
    """The manifest (an empty one when there is none yet)."""
    if MANIFEST.exists():
        return json.loads(MANIFEST.read_text())
    return {"examples": {}}


def gallery_modules() -> list[str]:
    """Modules of ``treadle/examples`` that write frames (they take ``--out``): each must be in :data:`GALLERY`."""
    return sorted(p.stem for p in (ROOT / "treadle" / "examples").glob("[!_]*.py") if '"--out"' in p.read_text())


def stale_entries() -> list[str]:
    """Why each gallery entry's picture is out of date or missing (empty when every picture is current)."""
    records = load_manifest().get("examples", {})
    problems = [f"{m}: writes frames but is not in GALLERY (tools/make_gallery.py)"
                for m in gallery_modules() if m not in {e["name"] for e in GALLERY}]
    for entry in GALLERY:
        name = entry["name"]
        rec = records.get(name)
        if rec is None:
            problems.append(f"{name}: no picture")
        elif rec.get("source_sha256") != source_hash(name):
            problems.append(f"{name}: {rec['source']} changed since its picture was made")
        elif rec.get("command") != command(entry):
            problems.append(f"{name}: its arguments in GALLERY changed since its picture was made")
        elif not (OUT_DIR / rec["image"]).is_file():
            problems.append(f"{name}: {rec['image']} is missing")
        elif (OUT_DIR / rec["image"]).stat().st_size > MAX_BYTES:
            problems.append(f"{name}: {rec['image']} is over {MAX_BYTES} bytes")
    return problems


def _frames(folder: Path) -> list[Path]:
    frames = sorted(folder.glob("*.png"))
    if not frames:
        raise RuntimeError(f"the example wrote no PNG frames into {folder}")
    return frames


def _encode(frames: list[Path], target: Path, width: int) -> int:
    """Write ``frames`` as a GIF (several) or PNG (one) of the given width; returns the file size."""
    from PIL import Image

    images = []
    for f in frames:
        img = Image.open(f).convert("RGB")
        if img.width != width:
            img = img.resize((width, round(img.height * width / img.width)), Image.Resampling.LANCZOS)
        images.append(img)
    if len(images) == 1:
        images[0].save(target, optimize=True)
    else:
        # One shared palette keeps the animation from flickering and the file small.
        palette = images[len(images) // 2].quantize(colors=128, method=Image.Quantize.MEDIANCUT)
        quantized = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
        durations = [450] * (len(quantized) - 1) + [1800]  # hold the last (settled) frame
        quantized[0].save(target, save_all=True, append_images=quantized[1:], duration=durations, loop=0,
                          optimize=True)
    return target.stat().st_size


def render(entry: dict[str, Any]) -> dict[str, Any]:
    """Run one example and write its image; returns its manifest record."""
    name = entry["name"]
    with tempfile.TemporaryDirectory(prefix=f"gallery_{name}_") as tmp:
        out = Path(tmp) / name
        cmd = [sys.executable, "-m", f"treadle.examples.{name}", "--out", str(out), *entry["args"]]
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        frames = _frames(out)
        suffix = ".gif" if len(frames) > 1 else ".png"
        target = OUT_DIR / f"{name}{suffix}"
        for stale in OUT_DIR.glob(f"{name}.*"):
            stale.unlink()
        from PIL import Image

        width = Image.open(frames[0]).width
        size = _encode(frames, target, width)
        while size > MAX_BYTES and width > 64:
            width = int(width * 0.85)
            size = _encode(frames, target, width)
        if size > MAX_BYTES:
            raise RuntimeError(f"{target} is {size} bytes even at {width} pixels wide (limit {MAX_BYTES})")
        summary = r.stdout.strip().splitlines()
    print(f"{name}: {len(frames)} frames -> {target.relative_to(ROOT)} ({size / 1000:.0f} KB, {width} px) in "
          f"{seconds:.1f} s")
    return {"command": command(entry), "source": str(source_path(name).relative_to(ROOT)),
            "source_sha256": source_hash(name), "image": target.name, "frames": len(frames), "bytes": size,
            "summary": summary[-2:] if summary else []}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="examples to render (default: those whose source changed)")
    p.add_argument("--all", action="store_true", help="render every example")
    a = p.parse_args(argv)
    known = {e["name"]: e for e in GALLERY}
    unknown = [n for n in a.names if n not in known]
    if unknown:
        p.error(f"not in GALLERY: {', '.join(unknown)} (known: {', '.join(known)})")
    manifest = load_manifest()
    records = manifest.setdefault("examples", {})
    if a.names:
        todo = [known[n] for n in a.names]
    elif a.all:
        todo = list(GALLERY)
    else:
        todo = [e for e in GALLERY if records.get(e["name"], {}).get("source_sha256") != source_hash(e["name"])
                or records[e["name"]].get("command") != command(e)
                or not (OUT_DIR / records[e["name"]].get("image", "")).is_file()]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for entry in todo:
        records[entry["name"]] = render(entry)
    for name in [n for n in records if n not in known]:  # examples removed from the gallery
        image = OUT_DIR / records.pop(name).get("image", "")
        if image.is_file():
            image.unlink()
    manifest["examples"] = {e["name"]: records[e["name"]] for e in GALLERY if e["name"] in records}
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    if not todo:
        print("every gallery image is current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
