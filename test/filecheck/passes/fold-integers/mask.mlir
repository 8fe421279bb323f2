// RUN: deplo-opt %s -p fold-integers | filecheck %s

// Hugging Face's packed-sequence mask fused into a walk (the decoder layer's attention,
// 8 positions): each position is read through Python's wrap of a negative index
// (select(i < 0, i + 8, i)) at batch offset 0 * 8, then cast back to an index; the mask
// is `true and key <= query and seq[key] == seq[query]`. Every wrap is decided (the
// positions are loop indices, never negative), so the rows are the loop indices again and
// the mask is the two comparisons: what skip-masked-chunks recognises.

func.func @mask(%s: tensor<1x8xi64>, %x: tensor<8xf32>) -> tensor<8xf32> {
  %o = loop.kernel @k_mask ins(%s_b = %s : tensor<1x8xi64>, %x_b = %x : tensor<8xf32>) outs(%o_b : tensor<8xf32>) {
    %ninf = arith.constant 0xff800000 : f32
    %true = arith.constant true
    %zero = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c8 = arith.constant 8 : i64
    %neg = arith.cmpi slt, %zero, %zero : i64
    %up = arith.addi %zero, %c1 : i64
    %batch = arith.select %neg, %up, %zero : i64
    %offset = arith.muli %batch, %c8 : i64
    loop.for %a0 = 0 to 8 {
      %p0 = arith.index_cast %a0 : index to i64
      %q = arith.addi %p0, %zero : i64
      %qneg = arith.cmpi slt, %q, %zero : i64
      %qup = arith.addi %q, %c8 : i64
      %qw = arith.select %qneg, %qup, %q : i64
      %qid = arith.addi %offset, %qw : i64
      %row = arith.index_cast %qid : i64 to index
      %query = arith.index_cast %row : index to i64
      %sq = loop.load %s_b[0, %row] : memref<1x8xi64>
      %m = loop.for %a1 = 0 to 8 reduce(max) -> f32 {
        %p1 = arith.index_cast %a1 : index to i64
        %kneg = arith.cmpi slt, %p1, %zero : i64
        %kup = arith.addi %p1, %c8 : i64
        %kw = arith.select %kneg, %kup, %p1 : i64
        %kid = arith.addi %offset, %kw : i64
        %col = arith.index_cast %kid : i64 to index
        %key = arith.index_cast %col : index to i64
        %causal = arith.cmpi sle, %key, %query : i64
        %live = arith.andi %true, %causal : i1
        %sk = loop.load %s_b[0, %col] : memref<1x8xi64>
        %same = arith.cmpi eq, %sq, %sk : i64
        %both = arith.andi %live, %same : i1
        %v = loop.load %x_b[%col] : memref<8xf32>
        %score = arith.select %both, %v, %ninf : f32
        loop.yield %score : f32
      }
      loop.store %m, %o_b[%row] : memref<8xf32>
    }
  }
  func.return %o : tensor<8xf32>
}

// CHECK-LABEL: func.func @mask
// CHECK:         loop.for %a0 = 0 to 8 {
// CHECK-NEXT:      %query = arith.index_cast %a0 : index to i64
// CHECK-NEXT:      %sq = loop.load %s_b[0, %a0] : memref<1x8xi64>
// CHECK-NEXT:      %m = loop.for %a1 = 0 to 8 reduce(max) -> f32 {
// CHECK-NEXT:        %key = arith.index_cast %a1 : index to i64
// CHECK-NEXT:        %causal = arith.cmpi sle, %key, %query : i64
// CHECK-NEXT:        %sk = loop.load %s_b[0, %a1] : memref<1x8xi64>
// CHECK-NEXT:        %same = arith.cmpi eq, %sq, %sk : i64
// CHECK-NEXT:        %both = arith.andi %causal, %same : i1
// CHECK-NEXT:        %v = loop.load %x_b[%a1] : memref<8xf32>
// CHECK-NEXT:        %score = arith.select %both, %v, %ninf : f32
// CHECK:         loop.store %m, %o_b[%a0] : memref<8xf32>

// What is not known stays: a comparison the ranges do not decide (a1 - 3 < 0 for some
// a1), an unsigned comparison of a value that can be negative, a cast through i32 (it
// could wrap), a flag that is not constant.

func.func @kept(%x: tensor<8xf32>) -> tensor<8xf32> {
  %o = loop.kernel @k_kept ins(%x_b = %x : tensor<8xf32>) outs(%o_b : tensor<8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %c3 = arith.constant 3 : i64
    %c0 = arith.constant 0 : i64
    loop.for %a0 = 0 to 8 {
      %p = arith.index_cast %a0 : index to i64
      %d = arith.subi %p, %c3 : i64
      %low = arith.cmpi slt, %d, %c0 : i64
      %ulow = arith.cmpi ult, %d, %c3 : i64
      %n = arith.index_cast %a0 : index to i32
      %back = arith.index_cast %n : i32 to index
      %both = arith.andi %low, %ulow : i1
      %v = loop.load %x_b[%back] : memref<8xf32>
      %r = arith.select %both, %v, %zero : f32
      loop.store %r, %o_b[%a0] : memref<8xf32>
    }
  }
  func.return %o : tensor<8xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK:         %low = arith.cmpi slt, %d, %c0 : i64
// CHECK-NEXT:    %ulow = arith.cmpi ult, %d, %c3 : i64
// CHECK-NEXT:    %n = arith.index_cast %a0 : index to i32
// CHECK-NEXT:    %back = arith.index_cast %n : i32 to index
// CHECK-NEXT:    %both = arith.andi %low, %ulow : i1
// CHECK-NEXT:    %v = loop.load %x_b[%back] : memref<8xf32>
