# `import triton` makes triton.tools.tensor_descriptor reachable as an attribute (Triton's runtime imports it
# while the package loads), and host code reads it so: triton.tools.tensor_descriptor.TensorDescriptor.
from . import tensor_descriptor  # noqa: F401
