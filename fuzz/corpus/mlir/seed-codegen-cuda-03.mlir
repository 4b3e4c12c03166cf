func.func @mask(%ids: tensor<?x?xi32>, %scores: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xi1>) {
  %r:2 = loom.fusion(%ids, %scores) : (tensor<?x?xi32>, tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xi1>) {
  ^bb0(%i: tensor<?x?xi32>, %s: tensor<?x?xf32>):
    %pad = loom.constant dense<0> : tensor<i32>
    %isPad = loom.compare eq, %i, %pad : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
    %neg = loom.constant dense<-1.0e9> : tensor<f32>
    %m = loom.select %isPad, %neg, %s : (tensor<?x?xi1>, tensor<f32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %m, %isPad : tensor<?x?xf32>, tensor<?x?xi1>
  }
  return %r#0, %r#1 : tensor<?x?xf32>, tensor<?x?xi1>
}
