@tegula.jit
def reduce_atomics(x_ptr, total_ptr, lock_ptr, count_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))
    tl.atomic_max(total_ptr + 1 + tl.zeros([BLOCK], tl.int32), x, mask=mask, sem="acq_rel")
    tl.atomic_min(total_ptr + 2, tl.min(x, axis=0), sem="release", scope="gpu")
    while tl.atomic_cas(lock_ptr, 0, 1, sem="acquire") == 1:
        pass
    c = tl.load(count_ptr)
    tl.store(count_ptr, c + 1)
    tl.atomic_xchg(lock_ptr, 0, sem="release")
    tl.atomic_and(count_ptr + 1 + offs % 4, 0x7fffffff, mask=mask)
    tl.atomic_xor(count_ptr + 5, 3)
    (count_ptr + 6).atomic_add(1)
