#include "hotplug/modules/show_config.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::modules {
namespace {

// kmod keeps C strings: a NUL read from a file ends the text there.
absl::string_view CText(absl::string_view s) { return s.substr(0, s.find('\0')); }

// kmod's softdep_to_char: "pre: " and the line from the first pre: name to the last, then
// "post: " and the line from the first post: name to the last, with no blank between the two
// parts. The names are stored in line order, so a post: name written between two pre: names
// shows among the pre: names too.
std::string SoftdepValue(const ModprobeConfig::Softdep& softdep) {
  using Part = ModprobeConfig::Softdep::Part;
  std::vector<absl::string_view> names;
  size_t pre = 0;
  size_t post = 0;
  for (const Part part : softdep.order) {
    if (part == Part::kPre && pre < softdep.pre.size()) {
      names.push_back(CText(softdep.pre[pre++]));
    } else if (part == Part::kPost && post < softdep.post.size()) {
      names.push_back(CText(softdep.post[post++]));
    }
  }
  auto span = [&](Part wanted) -> std::string {
    size_t first = names.size();
    size_t last = 0;
    for (size_t i = 0; i < names.size() && i < softdep.order.size(); ++i) {
      if (softdep.order[i] != wanted) continue;
      first = std::min(first, i);
      last = i;
    }
    if (first == names.size()) return "";
    return absl::StrJoin(names.begin() + first, names.begin() + last + 1, " ");
  };
  std::string out;
  if (std::string s = span(Part::kPre); !s.empty()) absl::StrAppend(&out, "pre: ", s);
  if (std::string s = span(Part::kPost); !s.empty()) absl::StrAppend(&out, "post: ", s);
  return out;
}

void DumpBinary(const std::optional<KmodIndex>& index, const IndexFile& file, std::string* out) {
  if (index && file.state == IndexFile::State::kBinary) index->Dump("alias ", out);
}

}  // namespace

std::string FormatShowConfig(const ModuleIndex& index) {
  const ModprobeConfig& config = index.config();
  std::string out;
  for (const std::string& name : config.blacklist) absl::StrAppend(&out, "blacklist ", CText(name), "\n");
  for (const ModprobeConfig::Command& c : config.install) {
    absl::StrAppend(&out, "install ", CText(c.module), " ", CText(c.command), "\n");
  }
  for (const ModprobeConfig::Command& c : config.remove) {
    absl::StrAppend(&out, "remove ", CText(c.module), " ", CText(c.command), "\n");
  }
  for (const ModprobeConfig::Alias& a : config.aliases) {
    absl::StrAppend(&out, "alias ", CText(a.pattern), " ", CText(a.module), "\n");
  }
  for (const ModprobeConfig::Options& o : config.options) {
    absl::StrAppend(&out, "options ", CText(o.module), " ", CText(o.options), "\n");
  }
  for (const ModprobeConfig::Softdep& s : config.softdeps) {
    absl::StrAppend(&out, "softdep ", CText(s.pattern), " ", SoftdepValue(s), "\n");
  }
  absl::StrAppend(&out, "\n# End of configuration files. Dumping indexes now:\n\n");
  const std::vector<IndexFile>& files = index.index_files();
  for (const IndexFile& file : files) {
    if (file.name == "modules.alias") DumpBinary(index.alias(), file, &out);
  }
  for (const IndexFile& file : files) {
    if (file.name == "modules.symbols") DumpBinary(index.symbols(), file, &out);
  }
  return out;
}

}  // namespace hotring::hotplug::modules
