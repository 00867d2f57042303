"""rocmrevive: bring AMD gfx906 GPUs back to ROCm 6.4+ and 7.x, safely."""

__version__ = "0.1.0"
