"""Prints a function with one loom.fusion of N rank-1 operands summed into
one result: a kernel with N + 1 addresses and N + 1 dims as parameters."""
import sys

n = int(sys.argv[1])
args = ", ".join(f"%a{i}: tensor<?xf32>" for i in range(n))
types = ", ".join("tensor<?xf32>" for _ in range(n))
operands = ", ".join(f"%a{i}" for i in range(n))
block = ", ".join(f"%b{i}: tensor<?xf32>" for i in range(n))
print(f"func.func @wide({args}) -> tensor<?xf32> {{")
print(f"  %r = loom.fusion({operands}) : ({types}) -> tensor<?xf32> {{")
print(f"  ^bb0({block}):")
acc = "%b0"
for i in range(1, n):
    print(f"    %s{i} = loom.add {acc}, %b{i} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>")
    acc = f"%s{i}"
print(f"    loom.yield {acc} : tensor<?xf32>")
print("  }")
print("  return %r : tensor<?xf32>")
print("}")
