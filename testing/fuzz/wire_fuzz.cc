// Fuzzes the daemon's control socket input, whole datagrams: ParseWireMessage and every typed
// decoder (events from `send`, control requests, and the replies, acks and monitor events the
// clients decode). Properties: wire_check.h.
#include <cstddef>
#include <cstdint>

#include "testing/fuzz/fuzz_check.h"
#include "testing/fuzz/wire_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hotring::fuzz::CheckWireDatagram(hotring::fuzz::AsText(data, size));
  return 0;
}
