func.func @frontend(%q: tensor<?x2x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                    %ids: tensor<?x?xi32>, %seed: tensor<i64>) -> tensor<?x2x?x16xf32> {
  %pad = loom.padding_mask %ids {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  %causal = loom.causal_mask %ids {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  %mask = loom.add %pad, %causal : (tensor<?x1x1x?xf32>, tensor<?x?xf32>) -> tensor<?x1x?x?xf32>
  %c = loom.constant dense<2.500000e-01> : tensor<f32>
  %s = loom.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x?xf32>
  %t = loom.mul %s, %c : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m = loom.add %t, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = loom.softmax %m {axis = 3 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %d = loom.dropout %p, %seed {rate = 0.1 : f64, offset = 3 : i64} : (tensor<?x2x?x?xf32>, tensor<i64>) -> tensor<?x2x?x?xf32>
  %o = loom.matmul %d, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %s2 = loom.matmul %o, %k {transpose_rhs} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x?xf32>
  %t2 = loom.mul %s2, %c : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m2 = loom.add %t2, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p2 = loom.softmax %m2 {axis = 3 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %d2 = loom.dropout %p2, %seed {rate = 0.1 : f64, offset = 4 : i64} : (tensor<?x2x?x?xf32>, tensor<i64>) -> tensor<?x2x?x?xf32>
  %o2 = loom.matmul %d2, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  return %o2 : tensor<?x2x?x16xf32>
}
