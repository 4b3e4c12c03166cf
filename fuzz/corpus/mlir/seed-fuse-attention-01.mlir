func.func @onnx_export(%x: tensor<1x6x4x64xf32>, %k: tensor<1x4x6x64xf32>, %v: tensor<1x4x6x64xf32>,
                       %m1: tensor<1x1x1x6xf32>, %m2: tensor<6x6xf32>, %ids: tensor<1x6xi32>) -> tensor<1x6x4x64xf32> {
  %q = loom.transpose %x [0, 2, 1, 3] : (tensor<1x6x4x64xf32>) -> tensor<1x4x6x64xf32>
  %kt = loom.transpose %k [0, 1, 3, 2] : (tensor<1x4x6x64xf32>) -> tensor<1x4x64x6xf32>
  %s = loom.matmul %q, %kt : (tensor<1x4x6x64xf32>, tensor<1x4x64x6xf32>) -> tensor<1x4x6x6xf32>
  %c = loom.constant dense<8.0> : tensor<f32>
  %t = loom.div %s, %c : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %a1 = loom.add %t, %m1 : (tensor<1x4x6x6xf32>, tensor<1x1x1x6xf32>) -> tensor<1x4x6x6xf32>
  %causal = loom.causal_mask %ids {dim = 1 : i64} : tensor<1x6xi32> -> tensor<6x6xf32>
  %a2 = loom.add %a1, %causal : (tensor<1x4x6x6xf32>, tensor<6x6xf32>) -> tensor<1x4x6x6xf32>
  %a3 = loom.add %m2, %a2 : (tensor<6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %p = loom.softmax %a3 {axis = 3 : i64} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %o = loom.matmul %p, %v : (tensor<1x4x6x6xf32>, tensor<1x4x6x64xf32>) -> tensor<1x4x6x64xf32>
  %merged = loom.transpose %o [0, 2, 1, 3] : (tensor<1x4x6x64xf32>) -> tensor<1x6x4x64xf32>
  return %merged : tensor<1x6x4x64xf32>
}
