func.func @nn(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %seed: tensor<i64>,
              %ids: tensor<?x?xi32>) -> (tensor<?x?x8xf32>, tensor<?x?xf32>, tensor<?x?x8xf32>) {
  %0 = loom.softmax %x {axis = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %1 = loom.log_softmax %0 {axis = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %2 = loom.layer_norm %1, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %3 = loom.dropout %2, %seed {rate = 0.1 : f64, offset = 3 : i64} : (tensor<?x?x8xf32>, tensor<i64>) -> tensor<?x?x8xf32>
  %4 = loom.cross_entropy %3, %ids {label_smoothing = 0.1 : f64, ignore_index = 0 : i64} : (tensor<?x?x8xf32>, tensor<?x?xi32>) -> tensor<?x?xf32>
  %5 = loom.cross_entropy_grad %3, %ids, %4 {label_smoothing = 0.1 : f64, ignore_index = 0 : i64} : (tensor<?x?x8xf32>, tensor<?x?xi32>, tensor<?x?xf32>) -> tensor<?x?x8xf32>
  return %3, %4, %5 : tensor<?x?x8xf32>, tensor<?x?xf32>, tensor<?x?x8xf32>
}
