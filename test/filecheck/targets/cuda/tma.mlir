// RUN: deplo-opt %s -t cuda | filecheck %s

// TMA on sm_90: the tensor map as a __grid_constant__ parameter after the buffers, the
// shared destination aligned to 128 bytes, mbarriers, their init by one thread, the
// expected bytes, the box copy (coordinates innermost first) and the parity wait loop.

func.func @forward(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k_tma grid(1, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %smem = kernel.shared "x_smem" align 128 : memref<2x16x64xf32>
    %bar = kernel.mbarrier "x_bar" : memref<2xi64>
    %c0 = arith.constant 0 : index
    %lead = arith.cmpi eq, %t, %c0 : index
    scf.if %lead {
      kernel.mbarrier_init %bar[0], 1 : memref<2xi64>
      kernel.mbarrier_init %bar[1], 1 : memref<2xi64>
    }
    kernel.barrier
    scf.if %lead {
      kernel.mbarrier_arrive_expect_tx %bar[0], 4096 : memref<2xi64>
      kernel.tma_load %xb[0, 0] -> %smem[0, 0, 0] box [16, 64] barrier %bar[0] : memref<128x64xf32> -> memref<2x16x64xf32>, memref<2xi64>
    }
    %acc = kernel.for %ko = %c0 to 8 step 1 reduce(add) -> f32 {
      %buf = affine.apply affine_map<(d0) -> (d0 mod 2)> (%ko)
      %next = affine.apply affine_map<(d0) -> ((d0 + 1) mod 2)> (%ko)
      %knext = affine.apply affine_map<(d0) -> ((d0 + 1) mod 8)> (%ko)
      %parity = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)> (%ko)
      %following = affine.apply affine_map<(d0) -> (d0 + 1)> (%ko)
      %c8 = arith.constant 8 : index
      %more = arith.cmpi ult, %following, %c8 : index
      scf.if %more {
        scf.if %lead {
          kernel.mbarrier_arrive_expect_tx %bar[%next], 4096 : memref<2xi64>
          kernel.tma_load %xb[%knext * 16, 0] -> %smem[%next, 0, 0] box [16, 64] barrier %bar[%next] : memref<128x64xf32> -> memref<2x16x64xf32>, memref<2xi64>
        }
      }
      kernel.mbarrier_wait %bar[%buf], %parity : memref<2xi64>
      %s = kernel.for %r = %c0 to 16 step 1 reduce(add) -> f32 {
        %v = kernel.load %smem[%buf, %r, %t] : memref<2x16x64xf32>
        kernel.yield %v : f32
      }
      kernel.barrier
      kernel.yield %s : f32
    }
    kernel.store %acc, %yb[%t] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK:      struct __align__(64) TmaDescriptor { unsigned long long opaque[16]; };
// CHECK:      extern "C" __global__ void __launch_bounds__(64) k_tma(
// CHECK-NEXT:     const float* __restrict__ xb,
// CHECK-NEXT:     float* __restrict__ yb,
// CHECK-NEXT:     const __grid_constant__ TmaDescriptor xb_tmap) {
// CHECK:        __shared__ __align__(128) float x_smem[2048];
// CHECK-NEXT:   __shared__ __align__(8) unsigned long long x_bar[2];
// CHECK:          asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\nfence.mbarrier_init.release.cluster;\n" :: "r"((unsigned)__cvta_generic_to_shared(&x_bar[0])), "r"(1) : "memory");
// CHECK:        __syncthreads();
// CHECK:          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"((unsigned)__cvta_generic_to_shared(&x_bar[0])), "r"(4096) : "memory");
// CHECK-NEXT:     asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" :: "r"((unsigned)__cvta_generic_to_shared(&x_smem[0])), "l"(reinterpret_cast<unsigned long long>(&xb_tmap)), "r"((int)(0)), "r"((int)(0)), "r"((unsigned)__cvta_generic_to_shared(&x_bar[0])) : "memory");
// CHECK:            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" :: "r"((unsigned)__cvta_generic_to_shared(&x_smem[next * 1024])), "l"(reinterpret_cast<unsigned long long>(&xb_tmap)), "r"((int)(0)), "r"((int)(knext * 16)), "r"((unsigned)__cvta_generic_to_shared(&x_bar[next])) : "memory");
// CHECK:        asm volatile("{\n.reg .pred done;\nTMA_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n@!done bra TMA_WAIT;\n}\n" :: "r"((unsigned)__cvta_generic_to_shared(&x_bar[buf])), "r"((unsigned)parity) : "memory");
