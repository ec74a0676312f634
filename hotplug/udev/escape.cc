#include "hotplug/udev/escape.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/utf8.h"

namespace hotring::hotplug::udev {
namespace {

bool Whitelisted(char c, absl::string_view allow) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("#+-.:=@_").find(c) != absl::string_view::npos ||
         (!allow.empty() && allow.find(c) != absl::string_view::npos);
}

bool IsSpace(char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); }

}  // namespace

std::string EncodeDevnodeName(absl::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size();) {
    const size_t seq = Utf8SequenceLength(in.substr(i));
    if (seq > 1) {
      absl::StrAppend(&out, in.substr(i, seq));
      i += seq;
      continue;
    }
    const char c = in[i];
    if (c == '\\' || !Whitelisted(c, "")) {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<uint8_t>(c));
    } else {
      out.push_back(c);
    }
    ++i;
  }
  return out;
}

std::string ReplaceWhitespace(absl::string_view in, size_t max_len) {
  std::string out;
  size_t i = 0;
  while (i < in.size() && IsSpace(in[i])) ++i;
  bool space = false;
  for (; i < in.size() && i < max_len && out.size() < max_len; ++i) {
    if (in[i] == '\0') break;
    if (IsSpace(in[i])) {
      space = true;
      continue;
    }
    if (space) {
      if (out.size() + 1 >= max_len) break;
      out.push_back('_');
      space = false;
    }
    out.push_back(in[i]);
  }
  return out;
}

std::string ReplaceChars(absl::string_view in, absl::string_view allow) {
  std::string out(in);
  for (size_t i = 0; i < out.size();) {
    if (Whitelisted(out[i], allow)) {
      ++i;
      continue;
    }
    if (out[i] == '\\' && i + 1 < out.size() && out[i + 1] == 'x') {
      i += 2;
      continue;
    }
    const size_t seq = Utf8SequenceLength(absl::string_view(out).substr(i));
    if (seq > 1) {
      i += seq;
      continue;
    }
    if (IsSpace(out[i]) && allow.find(' ') != absl::string_view::npos) {
      out[i] = ' ';
    } else {
      out[i] = '_';
    }
    ++i;
  }
  return out;
}

std::string BlkidSafeString(absl::string_view in) {
  const std::string folded = ReplaceWhitespace(in, in.size() + 1);
  std::string out;
  for (const char c : folded) {
    if (!absl::ascii_iscntrl(static_cast<unsigned char>(c))) out.push_back(c);
  }
  return out;
}

}  // namespace hotring::hotplug::udev
