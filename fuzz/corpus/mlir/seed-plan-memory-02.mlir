func.func @casts(%x: tensor<?x2xf32> {loom.dims = ["batch", ""]}) -> tensor<?x2xf32> {
  %e = loom.exp %x : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %i = loom.cast %e : tensor<?x2xf32> to tensor<?x2xi32>
  %h = loom.cast %i : tensor<?x2xi32> to tensor<?x2xbf16>
  %f = loom.cast %h : tensor<?x2xbf16> to tensor<?x2xf32>
  %y = loom.neg %f : (tensor<?x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}
