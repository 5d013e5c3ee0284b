"""Array utilities, profiling and logging built on Treadle (the ``warp.utils`` group of the reference API)."""
