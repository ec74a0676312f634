// Fuzzes kmod's binary index format (hotplug/modules/kmod_index), two ways chosen by the input:
//   - starting with the index magic (b0 07 f4 57): the input IS an image, as a corrupt or hostile
//     modules.*.bin would be. Opening may fail; lookups on what opened must stay inside the
//     image, end, and return wildcard values by ascending priority.
//   - anything else: lines "PATTERN VALUE" go through KmodIndexWriter and back through the
//     reader, checked against a plain model: Find gives a key's first value (lowest priority,
//     the newest of equals), SearchWild gives exactly the values of every key that fnmatch
//     says matches the query, by ascending priority. This is what keeps the wildcard walk's
//     pruning honest: it may skip a subtree only when fnmatch would match nothing in it.
#include <fnmatch.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "hotplug/modules/kmod_index.h"
#include "hotplug/modules/kmod_index_writer.h"
#include "testing/fuzz/fuzz_check.h"

namespace hotring::fuzz {
namespace {

namespace modules = hotplug::modules;

constexpr absl::string_view kMagic = "\xb0\x07\xf4\x57";
// Lines and queries per input: enough for any structure, few enough to stay fast.
constexpr size_t kMaxEntries = 64;
constexpr size_t kMaxQueries = 24;

// Queries a real daemon asks (modaliases, module names, symbols), for the image mode.
constexpr absl::string_view kRealQueries[] = {
    "pci:v00008086d00001C3Asv00001028sd00000491bc0Csc03i20",
    "usb:v1D6Bp0002d0601dc09dsc00dp01ic09isc00ip00in00",
    "usb:v046Dp0825d0010dcEFdsc02dp01ic01isc01ip00in00",
    "acpi*:PNP0303:*",
    "platform:serial8250",
    "virtio:d00000001v00001AF4",
    "input:b0011v0001p0001eAB41-e0,1,4,11,14,k71,72,73,ramlsfw",
    "e1000e",
    "snd_hda_intel",
    "symbol:usb_register_driver",
    "ext4",
    "",
    "*",
    "[",
    "a*b?c[d-f]",
};

void CheckWildOrder(const std::vector<modules::IndexValue>& found) {
  for (size_t i = 1; i < found.size(); ++i) {
    Require(found[i - 1].priority <= found[i].priority, "wildcard values by ascending priority");
  }
}

void FuzzImage(absl::string_view input) {
  absl::StatusOr<modules::KmodIndex> index = modules::KmodIndex::FromBytes(std::string(input));
  if (!index.ok()) {
    Require(index.status().code() == absl::StatusCode::kInvalidArgument,
            "a bad image is InvalidArgument");
    return;
  }
  // FromBytes copies; values point into the index's own image.
  std::vector<absl::string_view> queries(std::begin(kRealQueries), std::end(kRealQueries));
  for (const absl::string_view query : queries) {
    const std::optional<absl::string_view> value = index->Find(query);
    Require(!value || value->find('\0') == absl::string_view::npos, "a value ends at its NUL");
    std::vector<modules::IndexValue> found;
    index->SearchWild(query, &found);
    CheckWildOrder(found);
  }
  // The dump (modprobe -c) ends on any image, cyclic child tables included.
  std::string dump;
  index->Dump("alias ", &dump);
}

struct Entry {
  uint32_t priority;
  size_t seq;  // insertion order
  std::string value;
};

void FuzzWriter(absl::string_view input) {
  modules::KmodIndexWriter writer;
  std::map<std::string, std::vector<Entry>> model;
  std::vector<std::string> queries;
  size_t seq = 0;
  for (const absl::string_view line : absl::StrSplit(input, '\n')) {
    if (seq == kMaxEntries) break;
    const size_t space = line.find(' ');
    const absl::string_view key = line.substr(0, space);
    const absl::string_view value =
        space == absl::string_view::npos ? absl::string_view() : line.substr(space + 1);
    const uint32_t priority = static_cast<uint32_t>(seq % 3);
    if (queries.size() < kMaxQueries) queries.emplace_back(key);
    if (queries.size() < kMaxQueries) queries.emplace_back(value);
    // kmod's walk takes only '*', '?' and '[' as the start of a pattern: a key with a
    // backslash escape is matched by neither kmod nor this reader as fnmatch would. Depmod never
    // writes one; the model leaves them out.
    if (key.find('\\') != absl::string_view::npos) continue;
    const bool seven_bit = std::all_of(line.begin(), line.end(), [](char c) {
      return c != '\0' && static_cast<unsigned char>(c) < 128;
    });
    const bool inserted = writer.Insert(key, value, priority);
    Require(inserted == seven_bit, "the writer takes exactly 7-bit keys and values without NUL");
    if (!inserted) continue;
    model[std::string(key)].push_back({priority, seq, std::string(value)});
    ++seq;
  }
  const std::string image = writer.Serialize();
  absl::StatusOr<modules::KmodIndex> index = modules::KmodIndex::FromBytes(image);
  Require(index.ok(), "the reader opens what the writer wrote");

  // The dump lists every value once, keys in byte order, a key's values as stored (priority,
  // then the newest first), as kmod_dump_index does.
  std::string expected_dump;
  for (const auto& [key, entries] : model) {
    std::vector<Entry> stored = entries;
    std::stable_sort(stored.begin(), stored.end(), [](const Entry& a, const Entry& b) {
      return a.priority != b.priority ? a.priority < b.priority : a.seq > b.seq;
    });
    for (const Entry& e : stored) absl::StrAppend(&expected_dump, key, " ", e.value, "\n");
  }
  std::string dump;
  index->Dump("", &dump);
  Require(dump == expected_dump, "the dump lists every key's values in kmod's order");

  for (const auto& [key, entries] : model) {
    // The first stored value: lowest priority, the newest of those (depmod's order).
    const Entry* first = &entries.front();
    for (const Entry& e : entries) {
      if (e.priority < first->priority || (e.priority == first->priority && e.seq > first->seq)) {
        first = &e;
      }
    }
    const std::optional<absl::string_view> found = index->Find(key);
    Require(found.has_value() && *found == first->value, "Find gives a key's first value");
  }
  for (const std::string& query : queries) {
    std::vector<modules::IndexValue> found;
    index->SearchWild(query, &found);
    CheckWildOrder(found);
    // fnmatch cannot take a NUL. A query with a wildcard character of its own meets the trie's
    // wildcard children twice, as literal and as pattern, and kmod then reports a value twice
    // too; the model does not follow that. Real queries (modaliases, names) have neither.
    if (query.find_first_of(std::string("*?[\0", 4)) != std::string::npos) continue;
    std::vector<std::pair<uint32_t, std::string>> expected;
    for (const auto& [key, entries] : model) {
      if (::fnmatch(key.c_str(), query.c_str(), 0) != 0) continue;
      for (const Entry& e : entries) expected.emplace_back(e.priority, e.value);
    }
    std::vector<std::pair<uint32_t, std::string>> got;
    for (const modules::IndexValue& v : found) got.emplace_back(v.priority, std::string(v.value));
    std::sort(expected.begin(), expected.end());
    std::sort(got.begin(), got.end());
    if (got != expected) {
      std::fprintf(stderr, "query '%s': %zu values found, %zu expected\n", query.c_str(),
                   got.size(), expected.size());
      for (const auto& [priority, value] : expected) {
        std::fprintf(stderr, "  expected %u %s\n", priority, value.c_str());
      }
      for (const auto& [priority, value] : got) {
        std::fprintf(stderr, "  found    %u %s\n", priority, value.c_str());
      }
    }
    Require(got == expected, "SearchWild finds the values of exactly the keys fnmatch matches");
  }
}

}  // namespace
}  // namespace hotring::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hotring::fuzz;
  const absl::string_view input = AsText(data, size);
  if (input.substr(0, 4) == kMagic) {
    FuzzImage(input);
  } else {
    FuzzWriter(input);
  }
  return 0;
}
