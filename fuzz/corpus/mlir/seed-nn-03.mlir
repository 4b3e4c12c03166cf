func.func @masks_and_positions(%ids: tensor<?x?xi32>) -> (tensor<?x?xf32>, tensor<?x1x1x?xf32>, tensor<?xf32>, tensor<?x?x5xf32>) {
  %0 = loom.causal_mask %ids {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  %1 = loom.padding_mask %ids {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  %2 = loom.iota %ids {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?xf32>
  %3 = loom.one_hot %ids {depth = 5 : i64} : tensor<?x?xi32> -> tensor<?x?x5xf32>
  return %0, %1, %2, %3 : tensor<?x?xf32>, tensor<?x1x1x?xf32>, tensor<?xf32>, tensor<?x?x5xf32>
}
