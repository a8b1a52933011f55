"""Triton's triton.runtime.cache, for triton_key(): a string that changes when the compiler does,
which host code folds into keys of its own caches of compiled kernels."""

import functools
import hashlib
import pathlib


@functools.lru_cache()
def triton_key() -> str:
    import tegula
    import tegula._C

    digest = hashlib.sha256(pathlib.Path(tegula._C.__file__).read_bytes()).hexdigest()
    return f"{tegula.__version__}-{digest}"
