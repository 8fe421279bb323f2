// RUN: deplo-opt %s -p mark-unroll | filecheck %s
// RUN: deplo-opt %s -p 'mark-unroll{max_chunk_trips=8}' | filecheck %s --check-prefix=BOUND

// A K chunk's loop (it sits in a loop that stages slabs) unrolls up to the steps the cost
// model left on the kernel (chunk_unroll: a whole chunk of 16 for @k_unrolled); without
// that attribute, up to max_trips (8), so @k_rolled's chunk of 16 stays rolled (NVRTC
// unrolls it 4 times on its own). max_chunk_trips overrides both. The K-outer loop, which
// refills slabs, never unrolls.
func.func @unrolled(%x: tensor<64x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k_unrolled axes(%m : 64 = thread) ins(%xb = %x : tensor<64x64xf32>) outs(%yb : tensor<64xf32>) attributes {schedule = #tile.schedule<thread = [1, 1], k_chunk = 16, unroll = 16>} {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
      %xs = tile.stage %xb[0, %ko * 16] box [64, 16] : memref<64x64xf32> -> memref<64x16xf32>
      %part = loop.for %ki = 0 to 16 reduce(add) -> f32 {
        %a = loop.load %xs[%m, %ki] : memref<64x16xf32>
        loop.yield %a : f32
      }
      loop.yield %part : f32
    }
    loop.store %acc, %yb[%m] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

func.func @rolled(%x: tensor<64x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k_rolled axes(%m : 64 = thread) ins(%xb = %x : tensor<64x64xf32>) outs(%yb : tensor<64xf32>) {
    %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
      %xs = tile.stage %xb[0, %ko * 16] box [64, 16] : memref<64x64xf32> -> memref<64x16xf32>
      %part = loop.for %ki = 0 to 16 reduce(add) -> f32 {
        %a = loop.load %xs[%m, %ki] : memref<64x16xf32>
        loop.yield %a : f32
      }
      loop.yield %part : f32
    }
    loop.store %acc, %yb[%m] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// CHECK-LABEL: func.func @unrolled
// CHECK:         %acc = loop.for %ko = 0 to 4 reduce(add) -> f32 {
// CHECK:           %part = loop.for %ki = 0 to 16 reduce(add) -> f32 unroll 16 {
// CHECK-LABEL: func.func @rolled
// CHECK:           %part = loop.for %ki = 0 to 16 reduce(add) -> f32 {

// BOUND-LABEL: func.func @unrolled
// BOUND:           %part = loop.for %ki = 0 to 16 reduce(add) -> f32 {
