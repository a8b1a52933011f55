@tegula.jit
def row_sum(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    total = tl.sum(acc, axis=0)
    if total > 0:
        total = total * 2.0
    tl.store(out_ptr + row, total)
