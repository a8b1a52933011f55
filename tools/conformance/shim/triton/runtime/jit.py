"""Triton's host-side wrappers for tensors seen as another dtype, over
tegula.reinterpret."""

from tegula import JITFunction, KernelInterface, MockTensor, reinterpret as _reinterpret  # noqa: F401
from tegula._reinterpret import ReinterpretedArray

type_canonicalisation_dict = {
    "bool": "u1", "int1": "u1", "uint1": "u1", "i1": "u1",
    "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15", "float8_e4m3fn": "fp8e4nv",
    "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2": "fp8e5", "float8e5b16": "fp8e5b16",
    "float8_e5m2fnuz": "fp8e5b16", "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32",
    "float32": "fp32", "double": "fp64", "float64": "fp64", "int8": "i8", "int16": "i16", "int": "i32",
    "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "void": "void",
}
for _v in list(type_canonicalisation_dict.values()):
    type_canonicalisation_dict[_v] = _v


class TensorWrapper(ReinterpretedArray):
    """A torch tensor whose memory a kernel sees as `dtype`."""

    def __init__(self, base, dtype):
        super().__init__(base, dtype)
        self.data = base.data
        self.device = base.device
        self.shape = base.shape

    def stride(self, *args):
        return self.base.stride(*args)

    def element_size(self):
        return self.base.element_size()

    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base)

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes):
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)


def reinterpret(tensor, dtype):
    if isinstance(tensor, TensorWrapper):
        return tensor.base if dtype == tensor.base.dtype else TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr"):
        return TensorWrapper(tensor, dtype)
    return _reinterpret(tensor, dtype)
