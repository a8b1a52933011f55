@tegula.jit
def gelu_tanh(h_ptr):
    h = tl.load(h_ptr + tl.arange(0, 16))
    inner = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    tl.store(h_ptr + tl.arange(0, 16), 0.5 * h * (1.0 + tl.extra.libdevice.tanh(inner)))
