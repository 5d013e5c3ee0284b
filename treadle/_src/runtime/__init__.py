"""The runtime: devices, memory, streams and graphs, the kernel cache, the native toolchain, the CPU thread pool."""
