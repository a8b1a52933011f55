// ---- kernel ----
#if defined(__GNUC__) && !defined(__clang__)
#undef TG_IVDEP
#define TG_IVDEP
#endif
static inline void tegula_program(uint16_t* v0, uint16_t* v1, int32_t v2, int32_t v3, int32_t v4, int32_t pid_x, int32_t pid_y, int32_t pid_z, const int32_t* grid, unsigned char* scratch) {
  (void)pid_x; (void)pid_y; (void)pid_z; (void)grid; (void)scratch;
  // v5 = program_id()  masked_2d.py:9:12
  const int32_t v5 = (int32_t)pid_x;
  // v6 = constant()  masked_2d.py:9:12
  const int32_t v6 = 16;
  // v7 = mul(v5, v6)  masked_2d.py:9:12
  const int32_t v7 = tg_mul(v5, v6);
  alignas(64) int32_t v14[16];
  alignas(64) uint8_t v21[16];
  TG_IVDEP
  for (int i = 0; i < 16; ++i) {
    // v8 = arange()  masked_2d.py:9:36
    const int32_t e8 = (int32_t)(0 + i);
    // v9 = splat(v7)  masked_2d.py:9:12
    const int32_t e9 = v7;
    // v10 = add(v9, v8)  masked_2d.py:9:12
    const int32_t e10 = tg_add(e9, e8);
    // v12 = expand_dims(v10)  masked_2d.py:11:12
    const int32_t e12 = e10;
    // v13 = splat(v4)  masked_2d.py:11:12
    const int32_t e13 = v4;
    // v14 = mul(v12, v13)  masked_2d.py:11:12
    v14[i] = tg_mul(e12, e13);
    // v20 = splat(v2)  masked_2d.py:12:13
    const int32_t e20 = v2;
    // v21 = cmp.lt(v12, v20)  masked_2d.py:12:13
    v21[i] = e12 < e20;
  }
  alignas(64) int32_t v11[64];
  alignas(64) uint8_t v24[64];
  TG_IVDEP
  for (int i = 0; i < 64; ++i) {
    // v11 = arange()  masked_2d.py:10:12
    v11[i] = (int32_t)(0 + i);
    // v15 = expand_dims(v11)  masked_2d.py:11:37
    // v15 shares the array of v11
    // v23 = splat(v3)  masked_2d.py:12:35
    const int32_t e23 = v3;
    // v24 = cmp.lt(v15, v23)  masked_2d.py:12:35
    v24[i] = v11[i] < e23;
  }
  // the whole tile is in bounds (v27 all true): first and last index pass, no wrap
  const bool full0 = (tg_add(v7, (int32_t)0) < v2) && (tg_add(v7, (int32_t)15) < v2) && (tg_add(v7, (int32_t)0) <= tg_add(v7, (int32_t)15)) && (v11[0] < v3) && (v11[63] < v3) && (v11[0] <= v11[63]);
  for (int r = 0; r < 16; ++r) {
    uint16_t* const row29 = tg_addptr(v0, tg_add(v14[r * 64 / 64], v11[(r * 64) % 64]));  // &v29[r * 64]
    uint16_t* const row34 = tg_addptr(v1, tg_add(v14[r * 64 / 64], v11[(r * 64) % 64]));  // &v34[r * 64]
    if (full0) {
      TG_IVDEP
      for (int c = 0; c < 64; ++c) {
        const int i = r * 64 + c;
        // v32 = load(v29, v27, v41)  masked_2d.py:13:9
        const uint16_t e32 = *(row29 + c);
        // v42 = constant()  masked_2d.py:14:30
        const uint16_t e42 = tg_f64_to_f16(2.0);
        // v37 = mul(v32, v42)  masked_2d.py:14:30
        const uint16_t e37 = tg_f32_to_f16(tg_f16_to_f32(e32) * tg_f16_to_f32(e42));
        // v43 = constant()  masked_2d.py:14:30
        const uint16_t e43 = tg_f64_to_f16(1.0);
        // v40 = add(v37, v43)  masked_2d.py:14:30
        const uint16_t e40 = tg_f32_to_f16(tg_f16_to_f32(e37) + tg_f16_to_f32(e43));
        // store(v34, v40, v27)  masked_2d.py:14:5
        *(row34 + c) = e40;
      }
    } else {
      TG_IVDEP
      for (int c = 0; c < 64; ++c) {
        const int i = r * 64 + c;
        // v25 = broadcast(v21)  masked_2d.py:12:12
        const bool e25 = v21[r];
        // v26 = broadcast(v24)  masked_2d.py:12:12
        const bool e26 = v24[c];
        // v27 = and(v25, v26)  masked_2d.py:12:12
        const bool e27 = e25 & e26;
        // v41 = constant()  masked_2d.py:13:42
        const uint16_t e41 = tg_f64_to_f16(0.0);
        // v32 = load(v29, v27, v41)  masked_2d.py:13:9
        const uint16_t e32 = e27 ? *(row29 + c) : e41;
        // v42 = constant()  masked_2d.py:14:30
        const uint16_t e42 = tg_f64_to_f16(2.0);
        // v37 = mul(v32, v42)  masked_2d.py:14:30
        const uint16_t e37 = tg_f32_to_f16(tg_f16_to_f32(e32) * tg_f16_to_f32(e42));
        // v43 = constant()  masked_2d.py:14:30
        const uint16_t e43 = tg_f64_to_f16(1.0);
        // v40 = add(v37, v43)  masked_2d.py:14:30
        const uint16_t e40 = tg_f32_to_f16(tg_f16_to_f32(e37) + tg_f16_to_f32(e43));
        // store(v34, v40, v27)  masked_2d.py:14:5
        if (e27) *(row34 + c) = e40;
      }
    }
  }
}

extern "C" void tegula_kernel(void* const* args, const int32_t* grid, int64_t first, int64_t last) {
  uint16_t* const v0 = *static_cast<uint16_t* const*>(args[0]);  // x_ptr
  uint16_t* const v1 = *static_cast<uint16_t* const*>(args[1]);  // out_ptr
  const int32_t v2 = *static_cast<const int32_t*>(args[2]);  // M
  const int32_t v3 = *static_cast<const int32_t*>(args[3]);  // N
  const int32_t v4 = *static_cast<const int32_t*>(args[4]);  // stride
  unsigned char* const scratch = nullptr;
  const int64_t grid_x = grid[0], grid_y = grid[1];
  for (int64_t id = first; id < last; ++id) {
    const int32_t pid_x = (int32_t)(id % grid_x);
    const int32_t pid_y = (int32_t)((id / grid_x) % grid_y);
    const int32_t pid_z = (int32_t)(id / (grid_x * grid_y));
    tegula_program(v0, v1, v2, v3, v4, pid_x, pid_y, pid_z, grid, scratch);
  }
}
