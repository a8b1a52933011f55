from tegula._allocation import NullAllocator, get_allocator, set_allocator  # noqa: F401
