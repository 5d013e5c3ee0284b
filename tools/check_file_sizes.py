"""Fail if any Python file or C++ header in the project is over 1,500 lines (STYLE.md, rule 9)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LIMIT = 1500


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    try:
        files = subprocess.run(["git", "ls-files", "*.py", "*.h", "*.hpp", "*.cpp"], cwd=root, capture_output=True,
                               text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(root)) for ext in ("py", "h", "hpp", "cpp") for p in root.rglob(f"*.{ext}")]
    over = []
    for f in files:
        p = root / f
        if p.is_file():
            n = sum(1 for _ in p.open(errors="replace"))
            if n > LIMIT:
                over.append((f, n))
    for f, n in over:
        print(f"{f}: {n} lines (limit {LIMIT}); split it by responsibility", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
