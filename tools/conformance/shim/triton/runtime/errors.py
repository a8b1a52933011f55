class InterpreterError(Exception):
    pass


from tegula.runtime import OutOfResources  # noqa: E402,F401
