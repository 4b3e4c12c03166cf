func.func @f64_and_f16(%a: tensor<4xf64>, %b: tensor<4xf16>) -> (tensor<4xf64>, tensor<4xf16>) {
  %0 = loom.mul %a, %a : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %1 = loom.exp %b : (tensor<4xf16>) -> tensor<4xf16>
  return %0, %1 : tensor<4xf64>, tensor<4xf16>
}
