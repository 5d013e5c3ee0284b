"""The CUDA backend: kernels compiled by NVRTC, loaded and launched through the driver."""
