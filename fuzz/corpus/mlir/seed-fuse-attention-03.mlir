func.func @declined(%q: tensor<2x3x8xf32>, %k: tensor<2x3x8xf32>, %v: tensor<2x3x8xf32>,
                    %w: tensor<2x3x3xf32>, %kt: tensor<2x8x3xf32>, %seed: tensor<i64>)
    -> (tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x3xf32>,
        tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<2x3x3xf32>) {
  %c = loom.constant dense<0.5> : tensor<f32>
  %s0 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  %t0 = loom.mul %s0, %c : (tensor<2x3x3xf32>, tensor<f32>) -> tensor<2x3x3xf32>
  %p0 = loom.softmax %t0 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o0 = loom.matmul %p0, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  %s1 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  %p1 = loom.softmax %s1 {axis = 1 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o1 = loom.matmul %p1, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  %s2 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  %t2 = loom.mul %s2, %w : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p2 = loom.softmax %t2 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o2 = loom.matmul %p2, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  %s3 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  %p3 = loom.softmax %s3 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>

  %s4 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  %p4 = loom.softmax %s4 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %d4 = loom.dropout %p4, %seed {rate = 0.1 : f64, offset = 1 : i64} : (tensor<2x3x3xf32>, tensor<i64>) -> tensor<2x3x3xf32>
  %o4 = loom.matmul %d4, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  %s5 = loom.matmul %q, %kt : (tensor<2x3x8xf32>, tensor<2x8x3xf32>) -> tensor<2x3x3xf32>
  %p5 = loom.softmax %s5 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o5 = loom.matmul %p5, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  %s6 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  %p6 = loom.softmax %s6 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o6 = loom.matmul %w, %p6 : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  return %o0, %t0, %o1, %o2, %p3, %o4, %d4, %o5, %o6
      : tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x3xf32>,
        tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<2x3x3xf32>
}
