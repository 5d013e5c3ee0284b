"""``python -m treadle.warp_compat script.py args``: run a Warp program with ``import warp`` resolved to Treadle."""

from treadle._src.warp_compat.runner import main

main()
