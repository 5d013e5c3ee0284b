"""Running Warp programs on Treadle: the ``warp`` import alias and the ``python -m treadle.warp_compat`` runner."""
