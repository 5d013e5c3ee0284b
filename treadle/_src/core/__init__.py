"""The bottom layer: error classes with source locations, and the ctypes layouts of the native ABI."""
