# `import triton` makes triton.tools.tensor_descriptor reachable as an attribute (Triton's runtime imports it
# while the package loads), and host code reads it so: triton.tools.tensor_descriptor.TensorDescriptor.
from . import tensor_descriptor  # noqa: F401
# Triton 3.2/3.3's host descriptors: torch's tests reach them as triton.tools.experimental_descriptor after
# their has_triton_experimental_host_tma() imported the module.
from . import experimental_descriptor  # noqa: F401,E402
