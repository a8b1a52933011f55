from tegula.runtime.errors import AutotunerError, InterpreterError, OutOfResources, PTXASError  # noqa: F401
