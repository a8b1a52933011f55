// ---- kernel ----
#ifdef TG_MIN_BLOCKS
#define TG_LAUNCH_BOUNDS(threads) __launch_bounds__(threads, TG_MIN_BLOCKS)
#else
#define TG_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
#endif
extern "C" __global__ void TG_LAUNCH_BOUNDS(128) tegula_kernel(float* arg_x_ptr, float* arg_y_ptr, float* arg_out_ptr, int arg_n) {
  const int lane = threadIdx.x & 31;
  const int warp = tg_warp_index();
  const int tb0 = (lane << 2) + (warp << 7);
  // v0 = program_id()  vector_add.py:9:11
  const int v0 = (int)blockIdx.x;
  // v1 = constant()  vector_add.py:10:12
  const int v1 = 1024;
  // v2 = mul(v0, v1)  vector_add.py:10:12
  const int v2 = tg_mul(v0, v1);
  // v3 = arange()  vector_add.py:10:26
  int v3[8];
  #pragma unroll
  for (int j0 = 0; j0 < 8; ++j0) {
    v3[j0] = tb0 + (j0 & 3) + ((j0 >> 2) << 9);
  }
  // v4 = splat(v2)  vector_add.py:10:12
  int v4[8];
  #pragma unroll
  for (int j1 = 0; j1 < 8; ++j1) {
    v4[j1] = v2;
  }
  // v5 = add(v4, v3)  vector_add.py:10:12
  int v5[8];
  #pragma unroll
  for (int j2 = 0; j2 < 8; ++j2) {
    v5[j2] = tg_add(v4[j2], v3[j2]);
  }
  // v6 = splat(arg_n)  vector_add.py:11:12
  int v6[8];
  #pragma unroll
  for (int j3 = 0; j3 < 8; ++j3) {
    v6[j3] = arg_n;
  }
  // v7 = cmp.lt(v5, v6)  vector_add.py:11:12
  bool v7[8];
  #pragma unroll
  for (int j4 = 0; j4 < 8; ++j4) {
    v7[j4] = v5[j4] < v6[j4];
  }
  // v8 = splat(arg_x_ptr)  vector_add.py:12:17
  float* v8[8];
  #pragma unroll
  for (int j5 = 0; j5 < 8; ++j5) {
    v8[j5] = arg_x_ptr;
  }
  // v9 = addptr(v8, v5)  vector_add.py:12:17
  float* v9[8];
  #pragma unroll
  for (int j6 = 0; j6 < 8; ++j6) {
    v9[j6] = v8[j6] + (long long)v5[j6];
  }
  // v10 = load(v9, v7)  vector_add.py:12:9
  float v10[8];
  #pragma unroll
  for (int j7 = 0; j7 < 8; j7 += 4) {
    if (v7[j7 + 0] && v7[j7 + 1] && v7[j7 + 2] && v7[j7 + 3]) {
      const tg_vec<float, 4> w8 = *reinterpret_cast<const tg_vec<float, 4>*>(v9[j7]);
      #pragma unroll
      for (int j9 = 0; j9 < 4; ++j9) {
        v10[j7 + j9] = w8.v[j9];
      }
    } else {
      #pragma unroll
      for (int j10 = 0; j10 < 4; ++j10) {
        v10[j7 + j10] = v7[j7 + j10] ? *v9[j7 + j10] : (float)0;
      }
    }
  }
  // v11 = splat(arg_y_ptr)  vector_add.py:13:17
  float* v11[8];
  #pragma unroll
  for (int j11 = 0; j11 < 8; ++j11) {
    v11[j11] = arg_y_ptr;
  }
  // v12 = addptr(v11, v5)  vector_add.py:13:17
  float* v12[8];
  #pragma unroll
  for (int j12 = 0; j12 < 8; ++j12) {
    v12[j12] = v11[j12] + (long long)v5[j12];
  }
  // v13 = load(v12, v7)  vector_add.py:13:9
  float v13[8];
  #pragma unroll
  for (int j13 = 0; j13 < 8; j13 += 4) {
    if (v7[j13 + 0] && v7[j13 + 1] && v7[j13 + 2] && v7[j13 + 3]) {
      const tg_vec<float, 4> w14 = *reinterpret_cast<const tg_vec<float, 4>*>(v12[j13]);
      #pragma unroll
      for (int j15 = 0; j15 < 4; ++j15) {
        v13[j13 + j15] = w14.v[j15];
      }
    } else {
      #pragma unroll
      for (int j16 = 0; j16 < 4; ++j16) {
        v13[j13 + j16] = v7[j13 + j16] ? *v12[j13 + j16] : (float)0;
      }
    }
  }
  // v14 = splat(arg_out_ptr)  vector_add.py:14:14
  float* v14[8];
  #pragma unroll
  for (int j17 = 0; j17 < 8; ++j17) {
    v14[j17] = arg_out_ptr;
  }
  // v15 = addptr(v14, v5)  vector_add.py:14:14
  float* v15[8];
  #pragma unroll
  for (int j18 = 0; j18 < 8; ++j18) {
    v15[j18] = v14[j18] + (long long)v5[j18];
  }
  // v16 = add(v10, v13)  vector_add.py:14:30
  float v16[8];
  #pragma unroll
  for (int j19 = 0; j19 < 8; ++j19) {
    v16[j19] = v10[j19] + v13[j19];
  }
  // store(v15, v16, v7)  vector_add.py:14:5
  #pragma unroll
  for (int j20 = 0; j20 < 8; j20 += 4) {
    if (v7[j20 + 0] && v7[j20 + 1] && v7[j20 + 2] && v7[j20 + 3]) {
      uint4 w21;
      w21.x = __float_as_uint(v16[j20 + 0]);
      w21.y = __float_as_uint(v16[j20 + 1]);
      w21.z = __float_as_uint(v16[j20 + 2]);
      w21.w = __float_as_uint(v16[j20 + 3]);
      tg_st16(v15[j20], w21);
    } else {
      #pragma unroll
      for (int j22 = 0; j22 < 4; ++j22) {
        if (v7[j20 + j22]) *v15[j20 + j22] = v16[j20 + j22];
      }
    }
  }
}
