#include "hotplug/report/svg.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::report {
namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SvgTest, OneRowPerEventAndModuleWithTheirSegments) {
  absl::StatusOr<Timeline> t = ParseTimeline(
      "R 0 1 add pci /devices/pci0\nL 0 1 1 /devices/pci0\nS 0 1\nH 4000 1 handled\n"
      "R 10 2 add block /devices/pci0/vda\nL 10 2 2 /devices/pci0/vda\nS 4000 2\n"
      "H 4500 2 failed\n"
      "R 30 4 add input /devices/<in>&\"\nL 1030 3 4 /devices/<in>&\"\n"  // held; unfinished
      "M 3000 1 2500 virtio_pci ok\n");
  ASSERT_TRUE(t.ok()) << t.status();
  const std::string svg = RenderSvg(*t);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(Count(svg, "<svg "), 1u);
  EXPECT_EQ(Count(svg, "</svg>"), 1u);
  EXPECT_EQ(Count(svg, "<text class=\"label\""), 4u);  // 3 events + 1 module
  EXPECT_EQ(Count(svg, "<rect class=\"run\" x="), 1u);
  EXPECT_EQ(Count(svg, "<rect class=\"failed\" x="), 1u);
  EXPECT_EQ(Count(svg, "<rect class=\"queued\" x="), 1u);  // vda behind pci0
  EXPECT_EQ(Count(svg, "<rect class=\"slot\" x="), 0u);
  EXPECT_EQ(Count(svg, "<rect class=\"held\" x="), 1u);
  EXPECT_EQ(Count(svg, "<rect class=\"open\" x="), 1u);
  EXPECT_EQ(Count(svg, "<rect class=\"module\" x="), 1u);
  // Escaped, never raw.
  EXPECT_NE(svg.find("/devices/&lt;in&gt;&amp;&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<in>"), std::string::npos);
  // Rows go in order of reception: pci0 above vda above the input device, then the module.
  const size_t pci = svg.find(">1 add /devices/pci0<");
  const size_t vda = svg.find(">2 add /devices/pci0/vda<");
  const size_t in = svg.find(">4 add /devices/&lt;in");
  const size_t mod = svg.find(">module virtio_pci<");
  ASSERT_NE(pci, std::string::npos);
  EXPECT_LT(pci, vda);
  EXPECT_LT(vda, in);
  EXPECT_LT(in, mod);
  // The axis spans 0..4.5 ms: ticks every 0.5 ms.
  EXPECT_NE(svg.find(">4.500 ms<"), std::string::npos) << svg.substr(0, 3000);
}

TEST(SvgTest, RowsAreBounded) {
  std::string text;
  for (int i = 1; i <= 50; ++i) {
    absl::StrAppend(&text, "R ", i, " ", i, " add x /devices/d", i, "\nL ", i, " ", i, " ", i,
                    " /devices/d", i, "\nS ", i, " ", i, "\nH ", i + 5, " ", i, " handled\n");
  }
  absl::StatusOr<Timeline> t = ParseTimeline(text);
  ASSERT_TRUE(t.ok());
  SvgOptions options;
  options.max_rows = 10;
  const std::string svg = RenderSvg(*t, options);
  EXPECT_EQ(Count(svg, "<text class=\"label\""), 10u);
  EXPECT_NE(svg.find("(first 10 rows)"), std::string::npos);
}

TEST(SvgTest, EmptyTimelineIsAValidPicture) {
  const std::string svg = RenderSvg(Timeline{});
  EXPECT_EQ(Count(svg, "<svg "), 1u);
  EXPECT_EQ(Count(svg, "</svg>"), 1u);
}

TEST(SvgTest, XmlEscape) {
  EXPECT_EQ(XmlEscape("a<b>&'\"\x01"), "a&lt;b&gt;&amp;&apos;&quot;?");
}

}  // namespace
}  // namespace hotring::hotplug::report
