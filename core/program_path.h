// Finding the programs installed beside this one. The board's binary and its benchmarks are
// two files of one directory (hotring and hotring-bench): the benchmarks time the board's
// binary, and `hotring bench` runs the benchmarks.
#ifndef HOTRING_CORE_PROGRAM_PATH_H_
#define HOTRING_CORE_PROGRAM_PATH_H_

#include <string>

#include "absl/strings/string_view.h"

namespace hotring {

// The path of `name` in the directory of this program's executable (/proc/self/exe, so a
// symlink to the program, such as a runfiles entry, is followed to where it really lies);
// `name` alone when that cannot be read.
[[nodiscard]] std::string BesideThisProgram(absl::string_view name);

}  // namespace hotring

#endif  // HOTRING_CORE_PROGRAM_PATH_H_
