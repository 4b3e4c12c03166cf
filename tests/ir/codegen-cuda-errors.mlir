// Regions the CUDA target declines are refused with the reason, never
// compiled wrongly.
// RUN: loom-opt %s --verify-diagnostics --loom-lower-regions-cuda > /dev/null

// A row reduction needs a block-per-row kernel, not generated yet.
func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{cannot be a CUDA kernel: a row reduction (loom.softmax) needs a block-per-row kernel}}
  %r = loom.fusion(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>):
    %s = loom.softmax %a {axis = 1 : i64} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %s : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}
