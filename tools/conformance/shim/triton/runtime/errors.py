class InterpreterError(Exception):
    pass


class OutOfResources(Exception):
    pass
