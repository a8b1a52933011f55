@tegula.jit
def gelu_tanh(h):
    inner = SQRT_2_OVER_PI * (h + 0.044715 * h * h * h)
    return 0.5 * h * (1.0 + libdevice.tanh(inner))
