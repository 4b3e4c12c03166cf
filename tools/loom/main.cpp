//===- main.cpp - The loom command-line tool (placeholder) ----------------===//

#include <cstdio>

int main() {
  std::puts("loom: under construction");
  return 0;
}
