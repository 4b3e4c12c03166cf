func.func @ln16(%x: tensor<?x8xbf16>, %g: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<?x8xbf16> {
  %r = loom.fusion(%x, %g, %b) : (tensor<?x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<?x8xbf16> {
  ^bb0(%a: tensor<?x8xbf16>, %gg: tensor<8xbf16>, %bb: tensor<8xbf16>):
    %n = loom.layer_norm %a, %gg, %bb {epsilon = 1.0e-5 : f64} : (tensor<?x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<?x8xbf16>
    loom.yield %n : tensor<?x8xbf16>
  }
  return %r : tensor<?x8xbf16>
}
