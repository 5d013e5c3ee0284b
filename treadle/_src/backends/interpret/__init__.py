"""The interpreter backend (``wp.config.mode = "interpret"``): a kernel's typed IR run in Python, thread by thread."""
