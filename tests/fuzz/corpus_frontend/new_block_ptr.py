@tegula.jit
def block_ptr_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    a = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pm * BLOCK, 0), (BLOCK, BLOCK), (1, 0))
    b = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pn * BLOCK), (BLOCK, BLOCK), (1, 0))
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        acc += tl.dot(tl.load(a, boundary_check=(0, 1), padding_option="zero"),
                      tl.load(b, boundary_check=(0, 1), padding_option="nan"))
        a = tl.advance(a, (0, BLOCK))
        b = b.advance((BLOCK, 0))
    c = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
    c.store([pm * BLOCK, pn * BLOCK], acc)
    c.atomic_add([0, 0], c.load([pm * BLOCK, 0]))
