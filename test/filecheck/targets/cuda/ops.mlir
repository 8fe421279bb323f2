// RUN: deplo-opt %s -t cuda | filecheck %s

// Literals, accumulator identities, comparisons, guards with results, unrolled loops and
// the math intrinsics, each spelled as CUDA C.

func.func @forward(%x: tensor<4x8xf32>, %d: tensor<8xf64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<8xf64>) {
  %mx, %mn = kernel.kernel @k_ops grid(4, 1, 1) block(1, 1, 1) ins(%xb = %x : tensor<4x8xf32>) outs(%mxb : tensor<4xf32>, %mnb : tensor<4xf32>) {
    %row = kernel.block_id x
    %c0 = arith.constant 0 : index
    %hi, %lo, %prod = kernel.for %k = %c0 to 8 step 1 reduce(max, min, mul) -> (f32, f32, f32) unroll 8 {
      %v = kernel.load %xb[%row, %k] : memref<4x8xf32>
      kernel.yield %v, %v, %v : f32, f32, f32
    }
    %inf = arith.constant 0x7F800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %nan = arith.constant 0x7FC00000 : f32
    %third = arith.constant 0.333333343 : f32
    %neg = arith.constant -2.5 : f32
    %big = arith.constant 3.0e+38 : f32
    %isinf = arith.cmpf oeq, %hi, %inf : f32
    %unord = arith.cmpf ult, %lo, %ninf : f32
    %either = arith.ori %isinf, %unord : i1
    %picked = arith.select %either, %nan, %hi : f32
    %r = scf.if %either -> (f32) {
      %e = math.exp %picked : f32
      scf.yield %e : f32
    } else {
      %t = math.tanh %lo : f32
      %s = arith.mulf %t, %third : f32
      scf.yield %s : f32
    }
    %n = arith.negf %neg : f32
    %m = arith.minimumf %r, %big : f32
    %a = math.absf %prod : f32
    %p = math.powf %a, %n : f32
    %q = arith.addf %m, %p : f32
    kernel.store %q, %mxb[%row] : memref<4xf32>
    %lg = math.log %q : f32
    %sq = math.sqrt %lg : f32
    kernel.store %sq, %mnb[%row] : memref<4xf32>
  }
  %dd = kernel.kernel @k_f64 grid(1, 1, 1) block(8, 1, 1) ins(%db = %d : tensor<8xf64>) outs(%ob : tensor<8xf64>) {
    %t = kernel.thread_id x
    %v = kernel.load %db[%t] : memref<8xf64>
    %e = math.exp %v : f64
    %pi = arith.constant 3.141592653589793 : f64
    %w = arith.maximumf %e, %pi : f64
    %i = arith.fptosi %w : f64 to i32
    %f = arith.sitofp %i : i32 to f64
    kernel.store %f, %ob[%t] : memref<8xf64>
  }
  func.return %mx, %mn, %dd : tensor<4xf32>, tensor<4xf32>, tensor<8xf64>
}

// CHECK:      // grid (4, 1, 1), block (1, 1, 1)
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(1) k_ops(
// CHECK-NEXT:     const float* __restrict__ xb,
// CHECK-NEXT:     float* __restrict__ mxb,
// CHECK-NEXT:     float* __restrict__ mnb) {
// CHECK-NEXT:   const int row = blockIdx.x;
// CHECK-NEXT:   float hi = __int_as_float(0xff800000);
// CHECK-NEXT:   float lo = __int_as_float(0x7f800000);
// CHECK-NEXT:   float prod = 1.0f;
// CHECK-NEXT:   #pragma unroll 8
// CHECK-NEXT:   for (int k = 0; k < 8; ++k) {
// CHECK-NEXT:     const float v = xb[row * 8 + k];
// CHECK-NEXT:     hi = fmaxf(hi, v);
// CHECK-NEXT:     lo = fminf(lo, v);
// CHECK-NEXT:     prod = prod * v;
// CHECK-NEXT:   }
// CHECK-NEXT:   const bool isinf_ = hi == __int_as_float(0x7f800000);
// CHECK-NEXT:   const bool unord = !(lo >= __int_as_float(0xff800000));
// CHECK-NEXT:   const bool either = isinf_ | unord;
// CHECK-NEXT:   const float picked = either ? __int_as_float(0x7fc00000) : hi;
// CHECK-NEXT:   float r;
// CHECK-NEXT:   if (either) {
// CHECK-NEXT:     const float e = expf(picked);
// CHECK-NEXT:     r = e;
// CHECK-NEXT:   } else {
// CHECK-NEXT:     const float t = tanhf(lo);
// CHECK-NEXT:     const float s = t * 0.33333334f;
// CHECK-NEXT:     r = s;
// CHECK-NEXT:   }
// CHECK-NEXT:   const float n = -(-2.5f);
// CHECK-NEXT:   const float m = fminf(r, 3e+38f);
// CHECK-NEXT:   const float a = fabsf(prod);
// CHECK-NEXT:   const float p = powf(a, n);
// CHECK-NEXT:   const float q = m + p;
// CHECK-NEXT:   mxb[row] = q;
// CHECK-NEXT:   const float lg = logf(q);
// CHECK-NEXT:   const float sq = sqrtf(lg);
// CHECK-NEXT:   mnb[row] = sq;
// CHECK-NEXT: {{^}}}

// CHECK:      extern "C" __global__ void __launch_bounds__(8) k_f64(
// CHECK-NEXT:     const double* __restrict__ db,
// CHECK-NEXT:     double* __restrict__ ob) {
// CHECK-NEXT:   const int t = threadIdx.x;
// CHECK-NEXT:   const double v = db[t];
// CHECK-NEXT:   const double e = exp(v);
// CHECK-NEXT:   const double w = fmax(e, 3.141592653589793);
// CHECK-NEXT:   const int i = (int)w;
// CHECK-NEXT:   const double f = (double)i;
// CHECK-NEXT:   ob[t] = f;
// CHECK-NEXT: {{^}}}
