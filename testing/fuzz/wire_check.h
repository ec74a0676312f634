// The checks both wire fuzz targets run on one datagram (see wire_check.cc).
#ifndef HOTRING_TESTING_FUZZ_WIRE_CHECK_H_
#define HOTRING_TESTING_FUZZ_WIRE_CHECK_H_

#include "absl/strings/string_view.h"

namespace hotring::fuzz {

// Parses `datagram` as the daemon and the clients do and checks: a rejection is a DropError; an
// accepted message encodes back to the same bytes; exactly the decoder of its type accepts it
// (the others say bad_type); what a decoder accepts re-encodes to a message that decodes to
// the same value.
void CheckWireDatagram(absl::string_view datagram);

}  // namespace hotring::fuzz

#endif  // HOTRING_TESTING_FUZZ_WIRE_CHECK_H_
