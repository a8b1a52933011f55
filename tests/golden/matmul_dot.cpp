// ---- kernel ----
#if defined(__GNUC__) && !defined(__clang__)
#undef TG_IVDEP
#define TG_IVDEP
#endif
// The launch's StopPoll (Tegula's kernel ABI): a loop below may run without limit. Each of
// its chunks of 256 iterations asks whether to stop; once told so, the program returns, then the entry.
struct TgStopPoll { int32_t (*poll)(TgStopPoll* self); };
static inline bool tg_should_stop(TgStopPoll* stop, bool& stopped) {
  stopped = __builtin_expect(stop->poll(stop) != 0, 0);
  return stopped;
}

static inline void tegula_program(uint16_t* v0, uint16_t* v1, float* v2, int32_t v3, int32_t v4, int32_t v5, int32_t v6, int32_t v7, int32_t v8, int32_t pid_x, int32_t pid_y, int32_t pid_z, const int32_t* grid, unsigned char* scratch, TgStopPoll* tg_stop, bool& tg_stopped) {
  (void)pid_x; (void)pid_y; (void)pid_z; (void)grid; (void)scratch;
  // v9 = program_id()  matmul_dot.py:10:13
  const int32_t v9 = (int32_t)pid_x;
  // v10 = program_id()  matmul_dot.py:11:13
  const int32_t v10 = (int32_t)pid_y;
  // v11 = constant()  matmul_dot.py:12:10
  const int32_t v11 = 32;
  // v12 = mul(v9, v11)  matmul_dot.py:12:10
  const int32_t v12 = tg_mul(v9, v11);
  // v17 = mul(v10, v11)  matmul_dot.py:13:10
  const int32_t v17 = tg_mul(v10, v11);
  // v101 = constant()  matmul_dot.py:16:23
  const int32_t v101 = 15;
  // v102 = add(v5, v101)  matmul_dot.py:16:23
  const int32_t v102 = tg_add(v5, v101);
  // v28 = constant()  matmul_dot.py:16:23
  const int32_t v28 = 16;
  // v29 = div(v102, v28)  matmul_dot.py:16:23
  const int32_t v29 = tg_div(v102, v28);
  // v30 = constant()  matmul_dot.py:16:20
  const int32_t v30 = 0;
  // v31 = constant()  matmul_dot.py:16:14
  const int32_t v31 = 1;
  alignas(64) int32_t v20[32];
  alignas(64) uint16_t* v42[32];
  alignas(64) uint8_t v49[32];
  alignas(64) uint8_t v73[32];
  TG_IVDEP
  for (int i = 0; i < 32; ++i) {
    // v13 = arange()  matmul_dot.py:12:23
    const int32_t e13 = (int32_t)(0 + i);
    // v14 = splat(v12)  matmul_dot.py:12:10
    const int32_t e14 = v12;
    // v15 = add(v14, v13)  matmul_dot.py:12:10
    const int32_t e15 = tg_add(e14, e13);
    // v19 = splat(v17)  matmul_dot.py:13:10
    const int32_t e19 = v17;
    // v20 = add(v19, v13)  matmul_dot.py:13:10
    v20[i] = tg_add(e19, e13);
    // v38 = expand_dims(v15)  matmul_dot.py:18:29
    const int32_t e38 = e15;
    // v39 = splat(v6)  matmul_dot.py:18:29
    const int32_t e39 = v6;
    // v40 = mul(v38, v39)  matmul_dot.py:18:29
    const int32_t e40 = tg_mul(e38, e39);
    // v41 = splat(v0)  matmul_dot.py:18:21
    uint16_t* const e41 = v0;
    // v42 = addptr(v41, v40)  matmul_dot.py:18:21
    v42[i] = tg_addptr(e41, e40);
    // v48 = splat(v3)  matmul_dot.py:18:74
    const int32_t e48 = v3;
    // v49 = cmp.lt(v38, v48)  matmul_dot.py:18:74
    v49[i] = e38 < e48;
    // v64 = expand_dims(v20)  matmul_dot.py:19:55
    // v64 shares the array of v20
    // v72 = splat(v4)  matmul_dot.py:19:94
    const int32_t e72 = v4;
    // v73 = cmp.lt(v64, v72)  matmul_dot.py:19:94
    v73[i] = v20[i] < e72;
  }
  // v21 = arange()  matmul_dot.py:14:10  (recomputed where used)
  // v51 = splat(v5)  matmul_dot.py:18:94  (recomputed where used)
  // v60 = splat(v7)  matmul_dot.py:19:29  (recomputed where used)
  // v62 = splat(v1)  matmul_dot.py:19:21  (recomputed where used)
  // v69 = splat(v5)  matmul_dot.py:19:74  (recomputed where used)
  // v100 = constant()  matmul_dot.py:15:11
  alignas(64) float v100[1024];
  TG_IVDEP
  for (int i = 0; i < 1024; ++i) {
    v100[i] = (float)0.0;
  }
  alignas(64) uint16_t* v44[512];
  alignas(64) uint8_t v53[512];
  alignas(64) int32_t v66[512];
  alignas(64) uint8_t v75[512];
  for (int r = 0; r < 32; ++r) {
    TG_IVDEP
    for (int c = 0; c < 16; ++c) {
      const int i = r * 16 + c;
      // v44 = broadcast(v42)  matmul_dot.py:18:21
      v44[i] = v42[r];
      // v53 = broadcast(v49)  matmul_dot.py:18:73
      v53[i] = v49[r];
      // v66 = broadcast(v64)  matmul_dot.py:19:21
      v66[i] = v20[(r % 2) * 16 + c];
      // v75 = broadcast(v73)  matmul_dot.py:19:73
      v75[i] = v73[(r % 2) * 16 + c];
    }
  }
  // v81 = for(v30, v29, v31, v100)  matmul_dot.py:16:5
  alignas(64) float v33[1024];
  std::memcpy(v33, v100, sizeof(float) * 1024);
  const uint64_t trips0 = tg_trip_count<int32_t>(v30, v29, v31);
  for (uint64_t k1 = 0; k1 < trips0;) {
    const uint64_t k1_end = trips0 - k1 > 256u ? k1 + 256u : trips0;
    for (; k1 < k1_end; ++k1) {
      const int32_t v32 = tg_induction<int32_t>(v30, k1, v31);
      // v35 = mul(v32, v28)  matmul_dot.py:17:14
      const int32_t v35 = tg_mul(v32, v28);
      alignas(64) int32_t v37[16];
      alignas(64) uint8_t v52[16];
      alignas(64) uint16_t* v63[16];
      alignas(64) uint8_t v70[16];
      TG_IVDEP
      for (int i = 0; i < 16; ++i) {
        // v36 = splat(v35)  matmul_dot.py:17:14
        const int32_t e36 = v35;
        // v37 = add(v36, v21)  matmul_dot.py:17:14
        v37[i] = tg_add(e36, (int32_t)(0 + i));
        // v43 = expand_dims(v37)  matmul_dot.py:18:55
        // v43 shares the array of v37
        // v52 = cmp.lt(v43, v51)  matmul_dot.py:18:94
        v52[i] = v37[i] < v5;
        // v59 = expand_dims(v37)  matmul_dot.py:19:29
        const int32_t e59 = v37[i];
        // v61 = mul(v59, v60)  matmul_dot.py:19:29
        const int32_t e61 = tg_mul(e59, v7);
        // v63 = addptr(v62, v61)  matmul_dot.py:19:21
        v63[i] = tg_addptr(v1, e61);
        // v70 = cmp.lt(v59, v69)  matmul_dot.py:19:74
        v70[i] = e59 < v5;
      }
      alignas(64) uint16_t v58[512];
      alignas(64) uint16_t v79[512];
      // the whole tile is in bounds (v55, v76 all true): first and last index pass, no wrap
      const bool full2 = (tg_add(v12, (int32_t)0) < v3) && (tg_add(v12, (int32_t)31) < v3) && (tg_add(v12, (int32_t)0) <= tg_add(v12, (int32_t)31)) && (v37[0] < v5) && (v37[15] < v5) && (v37[0] <= v37[15]) && (v20[0] < v4) && (v20[31] < v4) && (v20[0] <= v20[31]);
      for (int r = 0; r < 32; ++r) {
        uint16_t* const row46 = tg_addptr(v44[r * 16], v37[(r * 16) % 16]);  // &v46[r * 16]
        uint16_t* const row67 = tg_addptr(v63[r * 16 / 32], v66[r * 16]);  // &v67[r * 16]
        if (full2) {
          TG_IVDEP
          for (int c = 0; c < 16; ++c) {
            const int i = r * 16 + c;
            // v58 = load(v46, v55, v103)  matmul_dot.py:18:13
            v58[i] = *(row46 + c);
            // v79 = load(v67, v76, v104)  matmul_dot.py:19:13
            v79[i] = *(row67 + c);
          }
        } else {
          TG_IVDEP
          for (int c = 0; c < 16; ++c) {
            const int i = r * 16 + c;
            // v54 = broadcast(v52)  matmul_dot.py:18:73
            const bool e54 = v52[c];
            // v55 = and(v53, v54)  matmul_dot.py:18:73
            const bool e55 = v53[i] & e54;
            // v58 = load(v46, v55, v103)  matmul_dot.py:18:13
            v58[i] = e55 ? *(row46 + c) : tg_f64_to_f16(0.0);
            // v74 = broadcast(v70)  matmul_dot.py:19:73
            const bool e74 = v70[r / 2];
            // v76 = and(v74, v75)  matmul_dot.py:19:73
            const bool e76 = e74 & v75[i];
            // v79 = load(v67, v76, v104)  matmul_dot.py:19:13
            v79[i] = e76 ? *(row67 + c) : tg_f64_to_f16(0.0);
          }
        }
      }
      // v80 = dot(v58, v79, v33)  matmul_dot.py:20:15
      alignas(64) float wide3[512];
      tg_widen_f16(v58, wide3, 512);
      alignas(64) float wide4[512];
      tg_widen_f16(v79, wide4, 512);
      // v80 is computed in place of v33
      tg_dot_f32<32, 32, 16>(wide3, wide4, v33);
    }
    if (k1 < trips0 && tg_should_stop(tg_stop, tg_stopped)) return;
  }
  alignas(64) float* v86[32];
  TG_IVDEP
  for (int i = 0; i < 32; ++i) {
    // v83 = splat(v8)  matmul_dot.py:21:22
    const int32_t e83 = v8;
    // v84 = mul(v38, v83)  matmul_dot.py:21:22
    const int32_t e84 = tg_mul(tg_add(v12, (int32_t)(0 + i)), e83);
    // v85 = splat(v2)  matmul_dot.py:21:14
    float* const e85 = v2;
    // v86 = addptr(v85, v84)  matmul_dot.py:21:14
    v86[i] = tg_addptr(e85, e84);
  }
  // the whole tile is in bounds (v99 all true): first and last index pass, no wrap
  const bool full5 = (tg_add(v12, (int32_t)0) < v3) && (tg_add(v12, (int32_t)31) < v3) && (tg_add(v12, (int32_t)0) <= tg_add(v12, (int32_t)31)) && (v20[0] < v4) && (v20[31] < v4) && (v20[0] <= v20[31]);
  for (int r = 0; r < 32; ++r) {
    float* const row90 = tg_addptr(v86[r * 32 / 32], v20[(r * 32) % 32]);  // &v90[r * 32]
    if (full5) {
      TG_IVDEP
      for (int c = 0; c < 32; ++c) {
        const int i = r * 32 + c;
        // store(v90, v81, v99)  matmul_dot.py:21:5
        *(row90 + c) = v33[i];
      }
    } else {
      TG_IVDEP
      for (int c = 0; c < 32; ++c) {
        const int i = r * 32 + c;
        // v97 = broadcast(v49)  matmul_dot.py:21:71
        const bool e97 = v49[r];
        // v98 = broadcast(v73)  matmul_dot.py:21:71
        const bool e98 = v73[c];
        // v99 = and(v97, v98)  matmul_dot.py:21:71
        const bool e99 = e97 & e98;
        // store(v90, v81, v99)  matmul_dot.py:21:5
        if (e99) *(row90 + c) = v33[i];
      }
    }
  }
}

extern "C" void tegula_kernel(void* const* args, const int32_t* grid, int64_t first, int64_t last) {
  uint16_t* const v0 = *static_cast<uint16_t* const*>(args[0]);  // a_ptr
  uint16_t* const v1 = *static_cast<uint16_t* const*>(args[1]);  // b_ptr
  float* const v2 = *static_cast<float* const*>(args[2]);  // c_ptr
  const int32_t v3 = *static_cast<const int32_t*>(args[3]);  // M
  const int32_t v4 = *static_cast<const int32_t*>(args[4]);  // N
  const int32_t v5 = *static_cast<const int32_t*>(args[5]);  // K
  const int32_t v6 = *static_cast<const int32_t*>(args[6]);  // stride_am
  const int32_t v7 = *static_cast<const int32_t*>(args[7]);  // stride_bk
  const int32_t v8 = *static_cast<const int32_t*>(args[8]);  // stride_cm
  unsigned char* const scratch = nullptr;
  // the launch's StopPoll: the slot after every other one
  TgStopPoll* const tg_stop = *static_cast<TgStopPoll* const*>(args[9]);
  bool tg_stopped = false;
  const int64_t grid_x = grid[0], grid_y = grid[1];
  for (int64_t id = first; id < last; ++id) {
    const int32_t pid_x = (int32_t)(id % grid_x);
    const int32_t pid_y = (int32_t)((id / grid_x) % grid_y);
    const int32_t pid_z = (int32_t)(id / (grid_x * grid_y));
    tegula_program(v0, v1, v2, v3, v4, v5, v6, v7, v8, pid_x, pid_y, pid_z, grid, scratch, tg_stop, tg_stopped);
    if (tg_stopped) return;
  }
}
