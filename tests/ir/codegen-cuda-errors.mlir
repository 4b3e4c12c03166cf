// Regions the CUDA target declines are refused with the reason, never
// compiled wrongly.
// RUN: loom-opt %s --verify-diagnostics --loom-lower-regions-cuda > /dev/null

// A reduction over every row needs a kernel across blocks, not generated yet.
func.func @total(%x: tensor<?x?xf32>) -> tensor<f32> {
  // expected-error @+1 {{cannot be a CUDA kernel: a reduction over every row (loom.reduce_sum) needs a kernel across blocks}}
  %r = loom.fusion(%x) : (tensor<?x?xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<?x?xf32>):
    %s = loom.reduce_sum %a [0, 1] : (tensor<?x?xf32>) -> tensor<f32>
    loom.yield %s : tensor<f32>
  }
  return %r : tensor<f32>
}
