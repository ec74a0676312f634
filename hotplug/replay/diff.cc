#include "hotplug/replay/diff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hotplug/replay/line_format.h"

namespace hotring::hotplug::replay {
namespace {

constexpr size_t kMaxMinimalLines = 4000;
constexpr size_t kContext = 3;

enum class Op { kKeep, kRemove, kAdd };

struct Step {
  Op op;
  size_t old_line;  // index into old (kKeep, kRemove)
  size_t new_line;  // index into new (kKeep, kAdd)
};

// Edit script of a[ab, ae) -> b[bb, be) by LCS; the middle part only.
void DiffMiddle(const std::vector<absl::string_view>& a, size_t ab, size_t ae,
                const std::vector<absl::string_view>& b, size_t bb, size_t be,
                std::vector<Step>& out) {
  const size_t n = ae - ab;
  const size_t m = be - bb;
  if (n > kMaxMinimalLines || m > kMaxMinimalLines) {
    for (size_t i = ab; i < ae; ++i) out.push_back({Op::kRemove, i, 0});
    for (size_t j = bb; j < be; ++j) out.push_back({Op::kAdd, 0, j});
    return;
  }
  // lcs[i][j]: LCS length of a[ab+i..ae) and b[bb+j..be).
  std::vector<uint16_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint16_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      at(i, j) = a[ab + i] == b[bb + j] ? static_cast<uint16_t>(at(i + 1, j + 1) + 1)
                                        : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[ab + i] == b[bb + j]) {
      out.push_back({Op::kKeep, ab + i, bb + j});
      ++i;
      ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      // Removals first, as diff -u shows a changed line: the old one, then the new one.
      out.push_back({Op::kRemove, ab + i, 0});
      ++i;
    } else {
      out.push_back({Op::kAdd, 0, bb + j});
      ++j;
    }
  }
}

}  // namespace

std::string UnifiedDiff(absl::string_view old_name, absl::string_view old_text,
                        absl::string_view new_name, absl::string_view new_text) {
  if (old_text == new_text) return "";
  const std::vector<absl::string_view> a = SplitLines(old_text);
  const std::vector<absl::string_view> b = SplitLines(new_text);
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  std::vector<Step> steps;
  for (size_t i = 0; i < prefix; ++i) steps.push_back({Op::kKeep, i, i});
  DiffMiddle(a, prefix, a.size() - suffix, b, prefix, b.size() - suffix, steps);
  for (size_t k = suffix; k > 0; --k) {
    steps.push_back({Op::kKeep, a.size() - k, b.size() - k});
  }
  std::string out = absl::StrCat("--- ", old_name, "\n+++ ", new_name, "\n");
  if (a.size() == b.size() && prefix == a.size()) {
    // Same lines: only the final newline differs.
    out += "@@ the files differ only in their last newline @@\n";
    return out;
  }
  // Hunks: runs of changes with up to kContext kept lines around them, merged when close.
  size_t s = 0;
  while (s < steps.size()) {
    while (s < steps.size() && steps[s].op == Op::kKeep) ++s;
    if (s == steps.size()) break;
    const size_t begin = s >= kContext ? s - kContext : 0;
    size_t end = s;
    while (end < steps.size()) {
      if (steps[end].op != Op::kKeep) {
        ++end;
        continue;
      }
      size_t keep = end;
      while (keep < steps.size() && steps[keep].op == Op::kKeep) ++keep;
      if (keep == steps.size() || keep - end > 2 * kContext) {
        end = std::min(end + kContext, steps.size());
        break;
      }
      end = keep;
    }
    size_t old_start = 0, new_start = 0, old_count = 0, new_count = 0;
    bool old_set = false, new_set = false;
    // Line numbers: the first old/new line the hunk touches (1-based), as diff -u prints.
    size_t old_next = 0, new_next = 0;
    for (size_t k = 0; k < begin; ++k) {
      if (steps[k].op != Op::kAdd) ++old_next;
      if (steps[k].op != Op::kRemove) ++new_next;
    }
    std::string body;
    for (size_t k = begin; k < end; ++k) {
      const Step& st = steps[k];
      if (st.op != Op::kAdd && !old_set) old_start = old_next + 1, old_set = true;
      if (st.op != Op::kRemove && !new_set) new_start = new_next + 1, new_set = true;
      switch (st.op) {
        case Op::kKeep:
          absl::StrAppend(&body, " ", a[st.old_line], "\n");
          ++old_count, ++new_count, ++old_next, ++new_next;
          break;
        case Op::kRemove:
          absl::StrAppend(&body, "-", a[st.old_line], "\n");
          ++old_count, ++old_next;
          break;
        case Op::kAdd:
          absl::StrAppend(&body, "+", b[st.new_line], "\n");
          ++new_count, ++new_next;
          break;
      }
    }
    if (!old_set) old_start = old_next;
    if (!new_set) new_start = new_next;
    absl::StrAppend(&out, "@@ -", old_start, ",", old_count, " +", new_start, ",", new_count,
                    " @@\n", body);
    s = end;
  }
  return out;
}

}  // namespace hotring::hotplug::replay
