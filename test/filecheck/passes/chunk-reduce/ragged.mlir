// RUN: deplo-opt %s -p chunk-reduce | filecheck %s
// RUN: deplo-opt %s -p 'chunk-reduce{chunks=3}' | filecheck %s --check-prefix=THREE

// x.amax(-1) of x (4, 40009): four rows of a prime length. The planner wants 8 chunks a
// row (4 rows are too few blocks); no power of two divides 40009, so the chunks are
// ragged: 8 of 5002, the last one 4995 long. Its steps past the row yield max's
// identity (-inf, so the padding changes nothing: not 0), and the load that may now
// leave the row is guarded. chunks=3 likewise (3 x 13337 = 40011).

func.func @forward(%x: tensor<4x40009xf32>) -> tensor<4xf32> {
  %m = tile.kernel @k_amax axes(%a0 : 4 = free) ins(%x_b = %x : tensor<4x40009xf32>) outs(%m_b : tensor<4xf32>) {
    %m_1 = loop.for %a1 = 0 to 40009 reduce(max) -> f32 {
      %in = loop.load %x_b[%a0, %a1] : memref<4x40009xf32>
      loop.yield %in : f32
    }
    loop.store %m_1, %m_b[%a0] : memref<4xf32>
  }
  func.return %m : tensor<4xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK:       tile.kernel @k_amax_chunks axes(%a0 : 4 = free, %c : 8 = free)
// CHECK-NEXT:    loop.for %a1_in = 0 to 5002 reduce(max) -> f32 {
// CHECK-NEXT:      %a1 = affine.apply affine_map<(d0, d1) -> (((d0 * 5002) + d1))> (%c, %a1_in)
// CHECK-NEXT:      %in = loop.load %x_b[%a0, %a1] guarded : memref<4x40009xf32>
// CHECK-NEXT:      %[[END:.*]] = arith.constant 40009 : index
// CHECK-NEXT:      %in_chunk = arith.cmpi ult, %a1, %[[END]] : index
// CHECK-NEXT:      %[[ID:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %[[V:.*]] = arith.select %in_chunk, %in, %[[ID]] : f32
// CHECK-NEXT:      loop.yield %[[V]] : f32
// CHECK:       tile.kernel @k_amax axes(%a0 : 4 = free)
// CHECK-NEXT:    loop.for %c_part = 0 to 8 reduce(max) -> f32 {

// THREE:       tile.kernel @k_amax_chunks axes(%a0 : 4 = free, %c : 3 = free)
// THREE-NEXT:    loop.for %a1_in = 0 to 13337 reduce(max) -> f32 {
// THREE:           arith.select %in_chunk
// THREE:         loop.for %c_part = 0 to 3 reduce(max) -> f32 {
