import types

from . import errors, jit  # noqa: F401
from .jit import JITFunction  # noqa: F401


class _Target:
    def __init__(self, backend, arch, warp_size):
        self.backend, self.arch, self.warp_size = backend, arch, warp_size


def _device_name():
    import os
    return os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")


class _ActiveDriver:
    def get_current_target(self):
        if _device_name() == "cuda":
            import tegula._C as C
            return _Target("cuda", int(C.cuda_device_arch(0)), 32)
        return _Target("cpu", "x86_64", 1)

    def get_current_device(self):
        return 0

    def get_active_torch_device(self):
        import torch
        return torch.device(_device_name())

    utils = types.SimpleNamespace(
        get_device_properties=lambda device: {"max_shared_mem": 227 * 1024, "multiprocessor_count": 132,
                                              "max_num_regs": 65536, "warpSize": 32})


driver = types.SimpleNamespace(active=_ActiveDriver())
