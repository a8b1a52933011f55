from tegula import TensorDescriptor  # noqa: F401
