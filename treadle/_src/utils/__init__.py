"""Array utilities built on Treadle (the ``warp.utils`` group of the reference API)."""
