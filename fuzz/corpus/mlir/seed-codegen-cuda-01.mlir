func.func @gelu_sin_cos(%x: tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  %r:2 = loom.fusion(%x) : (tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  ^bb0(%a: tensor<8x5xf32>):
    %g = loom.gelu %a : (tensor<8x5xf32>) -> tensor<8x5xf32>
    %s = loom.sin %a : (tensor<8x5xf32>) -> tensor<8x5xf32>
    %c = loom.cos %s : (tensor<8x5xf32>) -> tensor<8x5xf32>
    loom.yield %g, %c : tensor<8x5xf32>, tensor<8x5xf32>
  }
  return %r#0, %r#1 : tensor<8x5xf32>, tensor<8x5xf32>
}
