"""The CPU backend: kernels built by the system C++ compiler into cached shared libraries, run by the thread pool."""
