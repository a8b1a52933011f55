from tegula import TensorDescriptor  # noqa: F401  (Triton 3.3 kept TensorDescriptor here too)
from tegula.experimental_descriptor import (TmaDescKernelParam, create_1d_tma_descriptor,  # noqa: F401
                                            create_2d_tma_descriptor)
