// Counts the heap allocations of the binary it is linked into: the library replaces the global
// operator new (and delete, to match), so tests and benchmarks can say how many allocations a
// piece of code made. For test and benchmark binaries only (alwayslink).
#ifndef HOTRING_TESTING_ALLOCATION_COUNTER_H_
#define HOTRING_TESTING_ALLOCATION_COUNTER_H_

#include <cstdint>

namespace hotring::testing {

// Allocations through operator new (any thread) since the program started.
[[nodiscard]] uint64_t AllocationCount();

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_ALLOCATION_COUNTER_H_
