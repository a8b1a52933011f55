@tegula.jit
def gelu_tanh(h):
    inner = _GELU_SCALE * (h + 0.044715 * h * h * h)
    return 0.5 * h * (1.0 + libdevice.tanh(inner))
