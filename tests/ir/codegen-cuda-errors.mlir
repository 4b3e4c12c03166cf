// Regions the CUDA target declines are refused with the reason, never
// compiled wrongly.
// RUN: loom-opt %s --verify-diagnostics --loom-lower-regions-cuda > /dev/null

// A result broadcast over rows (the bias's update) may share storage with
// an operand that other rows still read; the CPU writes it from the last
// row only, but a GPU's rows run at once.
func.func @bias_update(%x: tensor<?x?xf32>, %b: tensor<1x?xf32>) -> (tensor<?x?xf32>, tensor<1x?xf32>) {
  // expected-error @+1 {{cannot be a CUDA kernel: a result broadcast over rows, which may share storage with an operand other rows read, needs ordered writes}}
  %r:2 = loom.fusion(%x, %b) : (tensor<?x?xf32>, tensor<1x?xf32>) -> (tensor<?x?xf32>, tensor<1x?xf32>) {
  ^bb0(%a: tensor<?x?xf32>, %c: tensor<1x?xf32>):
    %s = loom.add %a, %c : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
    %two = loom.constant dense<2.0> : tensor<f32>
    %d = loom.mul %c, %two : (tensor<1x?xf32>, tensor<f32>) -> tensor<1x?xf32>
    loom.yield %s, %d : tensor<?x?xf32>, tensor<1x?xf32>
  }
  return %r#0, %r#1 : tensor<?x?xf32>, tensor<1x?xf32>
}
