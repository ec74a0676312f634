#include "hotplug/udev/escape.h"

#include "gtest/gtest.h"

namespace hotring::hotplug::udev {
namespace {

TEST(EncodeDevnodeName, KeepsSafeCharactersAndEscapesTheRest) {
  EXPECT_EQ(EncodeDevnodeName("rootfs"), "rootfs");
  EXPECT_EQ(EncodeDevnodeName("my disk"), "my\\x20disk");
  EXPECT_EQ(EncodeDevnodeName("a/b"), "a\\x2fb");
  EXPECT_EQ(EncodeDevnodeName("../../etc"), "..\\x2f..\\x2fetc");
  EXPECT_EQ(EncodeDevnodeName("back\\slash"), "back\\x5cslash");
  EXPECT_EQ(EncodeDevnodeName("#+-.:=@_"), "#+-.:=@_");
  EXPECT_EQ(EncodeDevnodeName(std::string("a\nb\0c", 5)), "a\\x0ab\\x00c");
}

TEST(EncodeDevnodeName, KeepsValidUtf8AndEscapesInvalidBytes) {
  EXPECT_EQ(EncodeDevnodeName("h\xc3\xa9llo"), "h\xc3\xa9llo");
  EXPECT_EQ(EncodeDevnodeName("\xff\xc3"), "\\xff\\xc3");
  EXPECT_EQ(EncodeDevnodeName("\xc0\xaf"), "\\xc0\\xaf");  // overlong '/'
}

TEST(EncodeDevnodeName, NeverYieldsASlashOrDotDotComponent) {
  for (int c = 0; c < 256; ++c) {
    const std::string enc = EncodeDevnodeName(std::string(1, static_cast<char>(c)));
    EXPECT_EQ(enc.find('/'), std::string::npos) << c;
  }
}

TEST(ReplaceWhitespace, TrimsAndFoldsRuns) {
  EXPECT_EQ(ReplaceWhitespace("  QEMU   USB\tTablet  "), "QEMU_USB_Tablet");
  EXPECT_EQ(ReplaceWhitespace(""), "");
  EXPECT_EQ(ReplaceWhitespace("abcdef", 3), "abc");
}

TEST(ReplaceChars, ReplacesWhatUdevDoesNotAllow) {
  EXPECT_EQ(ReplaceChars("QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1"),
            "QEMU_QEMU_USB_Keyboard_68284-0000:00:04.0-1");
  EXPECT_EQ(ReplaceChars("a/b*c"), "a_b_c");
  EXPECT_EQ(ReplaceChars("a/b c", "/ "), "a/b c");
  EXPECT_EQ(ReplaceChars("a\\x2fb"), "a\\x2fb");
  EXPECT_EQ(ReplaceChars("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(BlkidSafeString, WhitespaceAndControlCharacters) {
  EXPECT_EQ(BlkidSafeString("  my  label "), "my_label");
  // Recorded from Debian 12's `blkid -p -o udev` on swap images with these labels.
  EXPECT_EQ(BlkidSafeString("my  la/bel"), "my_la/bel");
  EXPECT_EQ(BlkidSafeString("a\x01" "b c\xc3\xa9"), "ab_c\xc3\xa9");
  EXPECT_EQ(EncodeDevnodeName("my  la/bel"), "my\\x20\\x20la\\x2fbel");
  EXPECT_EQ(EncodeDevnodeName("a\x01" "b c\xc3\xa9"), "a\\x01b\\x20c\xc3\xa9");
}

}  // namespace
}  // namespace hotring::hotplug::udev
