func.func @unary(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = loom.neg %x : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %1 = loom.abs %0 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %2 = loom.exp %1 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %3 = loom.log %2 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %4 = loom.sqrt %3 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %5 = loom.rsqrt %4 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %6 = loom.tanh %5 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %7 = loom.sigmoid %6 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %8 = loom.relu %7 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %9 = loom.gelu %8 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %10 = loom.erf %9 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %11 = loom.sin %10 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %12 = loom.cos %11 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %12 : tensor<?x?xf32>
}
