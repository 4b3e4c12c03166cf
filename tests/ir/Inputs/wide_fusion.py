"""Prints a function with one loom.fusion of N rank-1 operands summed into
one result (a balanced tree of adds): a kernel with N + 1 addresses and
N + 1 dims as parameters."""
import sys

n = int(sys.argv[1])
args = ", ".join(f"%a{i}: tensor<?xf32>" for i in range(n))
types = ", ".join("tensor<?xf32>" for _ in range(n))
operands = ", ".join(f"%a{i}" for i in range(n))
block = ", ".join(f"%b{i}: tensor<?xf32>" for i in range(n))
print(f"func.func @wide({args}) -> tensor<?xf32> {{")
print(f"  %r = loom.fusion({operands}) : ({types}) -> tensor<?xf32> {{")
print(f"  ^bb0({block}):")
# A balanced tree of adds: wide, and only log2(N) deep.
level = [f"%b{i}" for i in range(n)]
count = 0
while len(level) > 1:
    nxt = []
    for i in range(0, len(level) - 1, 2):
        count += 1
        print(f"    %s{count} = loom.add {level[i]}, {level[i + 1]} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>")
        nxt.append(f"%s{count}")
    if len(level) % 2:
        nxt.append(level[-1])
    level = nxt
acc = level[0]
print(f"    loom.yield {acc} : tensor<?xf32>")
print("  }")
print("  return %r : tensor<?xf32>")
print("}")
