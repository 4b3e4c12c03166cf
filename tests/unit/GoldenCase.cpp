//===- GoldenCase.cpp - A library kernel's case, kept in a file -----------===//

#include "GoldenCase.h"

#include "runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

namespace loom::test {

namespace {

template <typename T> std::string joined(const std::vector<T> &values) {
  std::ostringstream out;
  out.precision(17);
  for (size_t i = 0; i < values.size(); ++i)
    out << (i ? "," : "") << values[i];
  return out.str();
}

template <typename T> std::vector<T> split(const std::string &text) {
  std::vector<T> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) {
      std::istringstream value(item);
      T x{};
      value >> x;
      out.push_back(x);
    }
  return out;
}

Status corrupt(const std::string &path, const std::string &why) {
  return Status::failure("golden case '" + path + "': " + why,
                         ErrorCode::Corrupt);
}

} // namespace

std::string goldenOutputDir() {
  const char *dir = std::getenv("LOOM_GOLDEN_DIR");
  return dir && *dir ? dir : "";
}

std::string nextGoldenName() {
  static std::map<std::string, int> counts;
  const ::testing::TestInfo *info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test =
      info ? std::string(info->test_suite_name()) + "." + info->name() : "case";
  return test + "." + std::to_string(counts[test]++);
}

Status writeGoldenCase(const std::string &dir, const GoldenCase &c) {
  SafeTensorFile file;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const runtime::Tensor &t = c.args[i];
    SafeTensor &out = file.tensors["arg." + std::to_string(i)];
    out.dtype = dtypeInfo(t.dtype()).safetensorsName;
    out.shape = t.shape();
    const auto *bytes = static_cast<const uint8_t *>(t.data());
    out.bytes.assign(bytes, bytes + t.bytes());
  }
  for (size_t r = 0; r < c.want.size(); ++r) {
    ErrorOr<SafeTensor> want =
        fromDoubles(c.want[r], {int64_t(c.want[r].size())}, "F64");
    if (!want)
      return want.status();
    file.tensors["want." + std::to_string(r)] = std::move(*want);
  }
  file.metadata["case"] = c.name;
  file.metadata["kernel"] = c.kernel;
  file.metadata["ints"] = joined(c.attrs.ints);
  file.metadata["floats"] = joined(c.attrs.floats);
  file.metadata["results"] = joined(c.results);
  std::vector<std::string> aliases;
  for (const GoldenCase::Alias &a : c.aliases)
    aliases.push_back(std::to_string(a.result) + ":" +
                      std::to_string(a.operand) + ":" +
                      std::to_string(a.byteOffset));
  file.metadata["aliases"] = joined(aliases);
  std::ostringstream rel;
  rel.precision(17);
  rel << c.rel;
  file.metadata["rel"] = rel.str();
  std::ostringstream floor;
  floor.precision(17);
  floor << c.floor;
  file.metadata["floor"] = floor.str();
  std::string name = c.name;
  for (char &ch : name)
    if (ch == '/')
      ch = '_';
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return saveSafetensors(dir + "/" + name + ".safetensors", file);
}

ErrorOr<GoldenCase> readGoldenCase(const std::string &path) {
  ErrorOr<SafeTensorFile> file = loadSafetensors(path);
  if (!file)
    return file.status();
  GoldenCase c;
  auto meta = [&](const char *key) -> const std::string * {
    auto it = file->metadata.find(key);
    return it == file->metadata.end() ? nullptr : &it->second;
  };
  for (const char *key : {"case", "kernel", "ints", "floats", "results",
                          "aliases", "rel", "floor"})
    if (!meta(key))
      return corrupt(path, std::string("no metadata '") + key + "'");
  c.name = *meta("case");
  c.kernel = *meta("kernel");
  c.attrs.ints = split<int64_t>(*meta("ints"));
  c.attrs.floats = split<double>(*meta("floats"));
  c.results = split<int>(*meta("results"));
  c.rel = std::strtod(meta("rel")->c_str(), nullptr);
  c.floor = std::strtod(meta("floor")->c_str(), nullptr);
  for (const std::string &alias : split<std::string>(*meta("aliases"))) {
    GoldenCase::Alias a;
    if (std::sscanf(alias.c_str(), "%d:%d:%lld", &a.result, &a.operand,
                    reinterpret_cast<long long *>(&a.byteOffset)) != 3)
      return corrupt(path, "alias '" + alias + "'");
    c.aliases.push_back(a);
  }
  for (size_t i = 0;; ++i) {
    auto it = file->tensors.find("arg." + std::to_string(i));
    if (it == file->tensors.end())
      break;
    const SafeTensor &t = it->second;
    std::optional<DType> dtype;
    for (const DTypeInfo &info : kDTypes)
      if (t.dtype == info.safetensorsName)
        dtype = info.dtype;
    if (!dtype)
      return corrupt(path, "arg." + std::to_string(i) + " of dtype " + t.dtype);
    ErrorOr<runtime::Tensor> host = runtime::Tensor::host(*dtype, t.shape);
    if (!host)
      return host.status();
    if (int64_t(t.bytes.size()) != host->bytes())
      return corrupt(path, "arg." + std::to_string(i) + " has another size");
    std::memcpy(host->data(), t.bytes.data(), t.bytes.size());
    c.args.push_back(std::move(*host));
  }
  for (size_t r = 0; r < c.results.size(); ++r) {
    auto it = file->tensors.find("want." + std::to_string(r));
    if (it == file->tensors.end())
      return corrupt(path, "no want." + std::to_string(r));
    ErrorOr<std::vector<double>> values = toDoubles(it->second);
    if (!values)
      return values.status();
    c.want.push_back(std::move(*values));
  }
  for (int r : c.results)
    if (r < 0 || r >= int(c.args.size()))
      return corrupt(path, "result argument " + std::to_string(r));
  for (const GoldenCase::Alias &a : c.aliases)
    if (a.result < 0 || a.result >= int(c.args.size()) || a.operand < 0 ||
        a.operand >= int(c.args.size()) || a.byteOffset < 0 ||
        a.byteOffset + c.args[a.result].bytes() > c.args[a.operand].bytes())
      return corrupt(path, "an alias outside its operand");
  return c;
}

} // namespace loom::test
