"""What should this owner do: advice that weighs every path a gfx906 box can take (the graft,
other ROCm stacks, Vulkan), from what ``trees`` (where) and ``diagnose`` (what is wrong) found.
It sits above both on the layer line (docs/architecture.md) and only reads."""
