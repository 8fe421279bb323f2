// RUN: deplo-opt %s -p 'cooperative-reduce{force=true}' | filecheck %s

// The second loop reads back what the first one wrote, element by element across the
// row: dealt out over threads, a thread would read elements another one writes, with no
// barrier between. Not legal, whatever the options say: nothing changes.

func.func @forward(%x: tensor<4x512xf32>) -> (tensor<4x512xf32>, tensor<4xf32>) {
  %y, %z = tile.kernel @k_two_pass axes(%a0 : 4 = free) ins(%xb = %x : tensor<4x512xf32>) outs(%yb : tensor<4x512xf32>, %zb : tensor<4xf32>) {
    loop.for %a1 = 0 to 512 {
      %v = loop.load %xb[%a0, %a1] : memref<4x512xf32>
      loop.store %v, %yb[%a0, %a1] : memref<4x512xf32>
    }
    %s = loop.for %a2 = 0 to 512 reduce(add) -> f32 {
      %u = loop.load %yb[%a0, 511 - %a2] : memref<4x512xf32>
      loop.yield %u : f32
    }
    loop.store %s, %zb[%a0] : memref<4xf32>
  }
  func.return %y, %z : tensor<4x512xf32>, tensor<4xf32>
}

// CHECK:      tile.kernel @k_two_pass axes(%a0 : 4 = free)
// CHECK-NEXT:   loop.for %a1 = 0 to 512 {
// CHECK:        %s = loop.for %a2 = 0 to 512 reduce(add) -> f32 {
