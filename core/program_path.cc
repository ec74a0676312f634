#include "core/program_path.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace hotring {

std::string BesideThisProgram(absl::string_view name) {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return std::string(name);
  const absl::string_view path(self, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return std::string(name);
  return absl::StrCat(path.substr(0, slash + 1), name);
}

}  // namespace hotring
