// Runs a fuzz target's entry point over files, without libFuzzer: the corpus replay tests, and
// a crash input reproduced with any compiler. Arguments are files or directories (every regular
// file in them, recursively, in name order). Fails when no input was found, so a replay test
// whose corpus went missing does not pass by checking nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool ReadFile(const std::filesystem::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(arg, error)) {
      for (auto it = std::filesystem::recursive_directory_iterator(arg, error);
           !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
        if (it->is_regular_file(error)) inputs.push_back(it->path());
      }
    } else {
      inputs.push_back(arg);
    }
    if (error) {
      std::fprintf(stderr, "replay: %s: %s\n", argv[i], error.message().c_str());
      return 1;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no input files (usage: %s FILE|DIR...)\n", argv[0]);
    return 1;
  }
  std::string data;
  for (const std::filesystem::path& path : inputs) {
    if (!ReadFile(path, data)) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 1;
    }
    // A property broken by this input aborts the process and names the file above it.
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), data.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  std::printf("replay: %zu inputs, all properties held\n", inputs.size());
  return 0;
}
