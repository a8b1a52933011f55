from tegula import CompilationError  # noqa: F401


class _StaticAssertionType(type):
    # Triton raises CompileTimeAssertionFailure, a CompilationError, for a failed tl.static_assert; Tegula raises
    # its CompilationError with the message "static assertion failed".
    def __instancecheck__(cls, instance):
        return isinstance(instance, CompilationError) and "static assertion failed" in str(instance)

    def __subclasscheck__(cls, sub):
        return type.__subclasscheck__(cls, sub)


class CompileTimeAssertionFailure(CompilationError, metaclass=_StaticAssertionType):
    pass
