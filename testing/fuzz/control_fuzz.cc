// Fuzzes control requests and the messages clients decode, past the header: the input's first
// byte picks the type (control request, control reply, ack, monitor event, event) and the
// cookie, the rest is the field list with '\n' between fields. Raw datagrams (wire_fuzz) spend
// most of their time on framing; this target spends it on COMMAND/STATUS/RESULT and the
// positional fields behind them. Properties: wire_check.h.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "hotplug/wire.h"
#include "testing/fuzz/fuzz_check.h"
#include "testing/fuzz/wire_check.h"

namespace {

void PutLe(std::string& out, uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hotring::hotplug::WireType;
  if (size == 0) return 0;
  static constexpr WireType kTypes[] = {WireType::kControlRequest, WireType::kControlReply,
                                        WireType::kAck, WireType::kMonitorEvent, WireType::kEvent};
  const uint8_t selector = data[0];
  const WireType type = kTypes[(selector & 0x7) % 5];
  const bool want_ack = type == WireType::kEvent && (selector & 0x8) != 0;
  absl::string_view text = hotring::fuzz::AsText(data + 1, size - 1);
  std::string block;
  block.reserve(text.size() + 1);
  for (const char c : text) block.push_back(c == '\n' ? '\0' : c);
  if (!block.empty() && block.back() != '\0') block.push_back('\0');
  std::string datagram(hotring::hotplug::kWireMagic);
  datagram.push_back(static_cast<char>(hotring::hotplug::kWireVersion));
  datagram.push_back(static_cast<char>(type));
  PutLe(datagram, want_ack ? hotring::hotplug::kWireFlagWantAck : 0, 2);
  PutLe(datagram, selector >> 4, 4);
  PutLe(datagram, static_cast<uint32_t>(block.size()), 4);
  datagram += block;
  hotring::fuzz::CheckWireDatagram(datagram);
  return 0;
}
