// ---- kernel ----
// The launch's StopPoll (Tegula's kernel ABI): a loop below may run without limit. Each of
// its chunks of 256 iterations asks whether to stop; once told so, the program returns, then the entry.
struct TgStopPoll { int32_t (*poll)(TgStopPoll* self); };
static inline bool tg_should_stop(TgStopPoll* stop, bool& stopped) {
  stopped = __builtin_expect(stop->poll(stop) != 0, 0);
  return stopped;
}

static inline void tegula_program(float* v0, float* v1, int32_t v2, int32_t v3, int32_t pid_x, int32_t pid_y, int32_t pid_z, const int32_t* grid, unsigned char* scratch, TgStopPoll* tg_stop, bool& tg_stopped) {
  (void)pid_x; (void)pid_y; (void)pid_z; (void)grid; (void)scratch;
  // v4 = program_id()  row_sum_loop.py:9:11
  const int32_t v4 = (int32_t)pid_x;
  // v7 = constant()  row_sum_loop.py:11:24
  const int32_t v7 = 0;
  // v8 = constant()  row_sum_loop.py:11:30
  const int32_t v8 = 128;
  // v14 = mul(v4, v3)  row_sum_loop.py:13:32
  const int32_t v14 = tg_mul(v4, v3);
  // v15 = addptr(v0, v14)  row_sum_loop.py:13:24
  float* const v15 = tg_addptr(v0, v14);
  alignas(64) float v35[128];
  TG_IVDEP
  for (int i = 0; i < 128; ++i) {
    // v35 = constant()  row_sum_loop.py:10:11
    v35[i] = (float)0.0;
  }
  // v24 = for(v7, v2, v8, v35)  row_sum_loop.py:11:5
  alignas(64) float v10[128];
  std::memcpy(v10, v35, sizeof(float) * 128);
  const uint64_t trips0 = tg_trip_count<int32_t>(v7, v2, v8);
  for (uint64_t k1 = 0; k1 < trips0;) {
    const uint64_t k1_end = trips0 - k1 > 256u ? k1 + 256u : trips0;
    for (; k1 < k1_end; ++k1) {
      const int32_t v9 = tg_induction<int32_t>(v7, k1, v8);
      // v23 is computed in place of v10
      // the whole tile is in bounds (v19 all true): first and last index pass, no wrap
      const bool full2 = (tg_add(v9, (int32_t)0) < v2) && (tg_add(v9, (int32_t)127) < v2) && (tg_add(v9, (int32_t)0) <= tg_add(v9, (int32_t)127));
      float* const row17 = tg_addptr(v15, tg_add(v9, (int32_t)(0 + 0)));  // &v17[0]
      if (full2) {
        TG_IVDEP
        for (int c = 0; c < 128; ++c) {
          const int i = c;
          // v22 = load(v17, v19, v35)  row_sum_loop.py:13:16
          const float e22 = *(row17 + c);
          // v23 = add(v10, v22)  row_sum_loop.py:13:9
          v10[i] = v10[i] + e22;
        }
      } else {
        TG_IVDEP
        for (int c = 0; c < 128; ++c) {
          const int i = c;
          // v12 = splat(v9)  row_sum_loop.py:12:16
          const int32_t e12 = v9;
          // v13 = add(v12, v11)  row_sum_loop.py:12:16
          const int32_t e13 = tg_add(e12, (int32_t)(0 + i));
          // v19 = cmp.lt(v13, v18)  row_sum_loop.py:13:58
          const bool e19 = e13 < v2;
          // v22 = load(v17, v19, v35)  row_sum_loop.py:13:16
          const float e22 = e19 ? *(row17 + c) : v35[i];
          // v23 = add(v10, v22)  row_sum_loop.py:13:9
          v10[i] = v10[i] + e22;
        }
      }
    }
    if (k1 < trips0 && tg_should_stop(tg_stop, tg_stopped)) return;
  }
  // v28 = reduce(v24)  row_sum_loop.py:14:13
  float v28{};
  for (int o3 = 0; o3 < 1; ++o3) {
    alignas(64) float lane5[64];
    TG_IVDEP
    for (int x6 = 0; x6 < 64; ++x6) {
      lane5[x6] = v10[o3 * 128 + x6];
    }
    for (int k7 = 64; k7 < 128; k7 += 64) {
      TG_IVDEP
      for (int x6 = 0; x6 < 64; ++x6) {
        const float v25 = lane5[x6];
        const float v26 = v10[o3 * 128 + k7 + x6];
        // v27 = add(v25, v26)  row_sum_loop.py:14:13
        const float v27 = v25 + v26;
        lane5[x6] = v27;
      }
    }
    for (int width8 = 32; width8 >= 1; width8 /= 2) {
      TG_IVDEP
      for (int x6 = 0; x6 < width8; ++x6) {
        const float v25 = lane5[x6];
        const float v26 = lane5[x6 + width8];
        // v27 = add(v25, v26)  row_sum_loop.py:14:13
        const float v27 = v25 + v26;
        lane5[x6] = v27;
      }
    }
    v28 = lane5[0];
  }
  // v29 = constant()  row_sum_loop.py:15:8
  const float v29 = (float)0.0;
  // v30 = cmp.gt(v28, v29)  row_sum_loop.py:15:8
  const bool v30 = v28 > v29;
  // v33 = if(v30)  row_sum_loop.py:15:5
  float v33{};
  if (v30) {
    // v31 = constant()  row_sum_loop.py:16:17
    const float v31 = (float)2.0;
    // v32 = mul(v28, v31)  row_sum_loop.py:16:17
    const float v32 = v28 * v31;
    v33 = v32;
  } else {
    v33 = v28;
  }
  // v34 = addptr(v1, v4)  row_sum_loop.py:17:14
  float* const v34 = tg_addptr(v1, v4);
  // store(v34, v33)  row_sum_loop.py:17:5
  *v34 = v33;
}

extern "C" void tegula_kernel(void* const* args, const int32_t* grid, int64_t first, int64_t last) {
  float* const v0 = *static_cast<float* const*>(args[0]);  // x_ptr
  float* const v1 = *static_cast<float* const*>(args[1]);  // out_ptr
  const int32_t v2 = *static_cast<const int32_t*>(args[2]);  // N
  const int32_t v3 = *static_cast<const int32_t*>(args[3]);  // stride
  unsigned char* const scratch = nullptr;
  // the launch's StopPoll: the slot after every other one
  TgStopPoll* const tg_stop = *static_cast<TgStopPoll* const*>(args[4]);
  bool tg_stopped = false;
  const int64_t grid_x = grid[0], grid_y = grid[1];
  for (int64_t id = first; id < last; ++id) {
    const int32_t pid_x = (int32_t)(id % grid_x);
    const int32_t pid_y = (int32_t)((id / grid_x) % grid_y);
    const int32_t pid_z = (int32_t)(id / (grid_x * grid_y));
    tegula_program(v0, v1, v2, v3, pid_x, pid_y, pid_z, grid, scratch, tg_stop, tg_stopped);
    if (tg_stopped) return;
  }
}
