#include "hotplug/udev/builtin_device.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hotring::hotplug::udev {

std::optional<absl::string_view> BuiltinDevice::Property(absl::string_view key) const {
  std::optional<absl::string_view> found;
  for (const auto& [k, v] : properties) {
    if (k == key) found = v;
  }
  return found;
}

std::string BuiltinDevice::Subsystem() const {
  if (const auto s = Property("SUBSYSTEM"); s.has_value() && !s->empty()) return std::string(*s);
  return SubsystemOf(sysfs, devpath);
}

std::string BuiltinDevice::DevType() const {
  if (const auto s = Property("DEVTYPE"); s.has_value()) return std::string(*s);
  return DevTypeOf(sysfs, devpath);
}

std::string BuiltinDevice::DevNode() const {
  std::string name;
  if (const auto s = Property("DEVNAME"); s.has_value()) {
    name = std::string(*s);
  } else if (auto u = UeventValue(sysfs, devpath, "DEVNAME"); u.has_value()) {
    name = std::move(*u);
  }
  if (name.empty() || absl::StartsWith(name, "/")) return name;
  return absl::StrCat("/dev/", name);
}

ParsedArgs ParseBuiltinArgs(absl::Span<const std::string> argv, absl::string_view short_options,
                            absl::Span<const LongOption> long_options) {
  ParsedArgs out;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      for (++i; i < argv.size(); ++i) out.operands.push_back(argv[i]);
      break;
    }
    if (absl::StartsWith(arg, "--")) {
      const absl::string_view body = absl::string_view(arg).substr(2);
      const size_t eq = body.find('=');
      const absl::string_view name = body.substr(0, eq);
      const LongOption* match = nullptr;
      int prefixes = 0;
      for (const LongOption& o : long_options) {
        if (o.name == name) {
          match = &o;
          prefixes = 1;
          break;
        }
        if (absl::StartsWith(o.name, name)) {
          match = &o;
          ++prefixes;
        }
      }
      if (match == nullptr || prefixes != 1) {
        out.options.emplace_back('?', "");
        continue;
      }
      if (!match->has_argument) {
        out.options.emplace_back(eq == body.npos ? match->letter : '?', "");
        continue;
      }
      if (eq != body.npos) {
        out.options.emplace_back(match->letter, std::string(body.substr(eq + 1)));
      } else if (i + 1 < argv.size()) {
        out.options.emplace_back(match->letter, argv[++i]);
      } else {
        out.options.emplace_back('?', "");
      }
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      out.operands.push_back(arg);
      continue;
    }
    // A cluster of short options: "-R", "-sX", "-s X".
    for (size_t j = 1; j < arg.size(); ++j) {
      const char c = arg[j];
      const size_t at = c == ':' ? absl::string_view::npos : short_options.find(c);
      if (at == absl::string_view::npos) {
        out.options.emplace_back('?', "");
        continue;
      }
      if (at + 1 < short_options.size() && short_options[at + 1] == ':') {
        if (j + 1 < arg.size()) {
          out.options.emplace_back(c, arg.substr(j + 1));
        } else if (i + 1 < argv.size()) {
          out.options.emplace_back(c, argv[++i]);
        } else {
          out.options.emplace_back('?', "");
        }
        break;
      }
      out.options.emplace_back(c, "");
    }
  }
  return out;
}

}  // namespace hotring::hotplug::udev
