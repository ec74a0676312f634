#include "hotplug/wire.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hotplug/drop_reason.h"
#include "hotplug/event_parser.h"

namespace hotring::hotplug {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

template <typename T>
std::optional<DropReason> ReasonOf(const absl::StatusOr<T>& result) {
  if (result.ok()) return std::nullopt;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  return DropReasonOf(result.status());
}

Event SampleEvent() {
  absl::StatusOr<Event> e = EventFromFields({{"ACTION", "add"},
                                             {"DEVPATH", "/devices/virtual/net/dummy0"},
                                             {"SUBSYSTEM", "net"},
                                             {"INTERFACE", "dummy0"},
                                             {"SEQNUM", "42"}});
  EXPECT_TRUE(e.ok()) << e.status();
  return *std::move(e);
}

// A header with the given raw values followed by `env`.
std::string RawMessage(absl::string_view magic, uint8_t version, uint8_t type, uint16_t flags,
                       uint32_t cookie, uint32_t length, absl::string_view env) {
  std::string out(magic);
  out.push_back(static_cast<char>(version));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags & 0xff));
  out.push_back(static_cast<char>(flags >> 8));
  for (int s = 0; s < 32; s += 8) out.push_back(static_cast<char>((cookie >> s) & 0xff));
  for (int s = 0; s < 32; s += 8) out.push_back(static_cast<char>((length >> s) & 0xff));
  out.append(env.data(), env.size());
  return out;
}

std::string Env(std::initializer_list<absl::string_view> parts) {
  std::string out;
  for (const absl::string_view p : parts) {
    out.append(p.data(), p.size());
    out.push_back('\0');
  }
  return out;
}

TEST(WireTest, HeaderLayoutIsLittleEndianAndDocumented) {
  const std::string bytes =
      EncodeWireMessage(AckMessage(Ack{.cookie = 0x01020304, .seqnum = 5,
                                       .result = EventResult::kHandled}));
  const std::string env = Env({"RESULT=handled", "SEQNUM=5"});
  const std::string expected = std::string("HRNG") + std::string("\x01\x02\x00\x00", 4) +
                               std::string("\x04\x03\x02\x01", 4) +
                               std::string(1, static_cast<char>(env.size())) +
                               std::string("\x00\x00\x00", 3) + env;
  EXPECT_EQ(bytes, expected);
  ASSERT_EQ(kWireHeaderBytes, 16u);
}

TEST(WireTest, EventRoundTripKeepsFlagsCookieAndEnvOrder) {
  const Event event = SampleEvent();
  const std::string bytes = EncodeWireMessage(EventMessage(event, 0xdeadbeef, true));
  absl::StatusOr<WireMessage> message = ParseWireMessage(bytes);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->type, WireType::kEvent);
  EXPECT_EQ(message->flags, kWireFlagWantAck);
  EXPECT_EQ(message->cookie, 0xdeadbeefu);
  EXPECT_EQ(message->Get("INTERFACE"), "dummy0");
  absl::StatusOr<Event> back = EventFromMessage(*std::move(message));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->env, event.env);
  EXPECT_EQ(back->seqnum, 42u);
  EXPECT_EQ(back->subsystem, "net");
  EXPECT_EQ(back->source, EventSource::kSend);

  absl::StatusOr<WireMessage> no_ack = ParseWireMessage(EncodeWireMessage(EventMessage(event, 1, false)));
  ASSERT_TRUE(no_ack.ok());
  EXPECT_EQ(no_ack->flags, 0);
}

TEST(WireTest, AckRoundTrip) {
  for (const EventResult r : {EventResult::kHandled, EventResult::kFailed, EventResult::kDuplicate,
                              EventResult::kTimedOut}) {
    absl::StatusOr<WireMessage> m =
        ParseWireMessage(EncodeWireMessage(AckMessage(Ack{.cookie = 9, .seqnum = 7, .result = r})));
    ASSERT_TRUE(m.ok()) << m.status();
    const absl::StatusOr<Ack> ack = AckFromMessage(*m);
    ASSERT_TRUE(ack.ok()) << ack.status();
    EXPECT_EQ(ack->cookie, 9u);
    EXPECT_EQ(ack->seqnum, 7u);
    EXPECT_EQ(ack->result, r);
    EXPECT_EQ(EventResultFromName(EventResultName(r)), r);
  }
  absl::StatusOr<WireMessage> m = ParseWireMessage(EncodeWireMessage(AckMessage(Ack{.cookie = 3})));
  ASSERT_TRUE(m.ok());
  const absl::StatusOr<Ack> ack = AckFromMessage(*m);
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(ack->seqnum, std::nullopt);
  EXPECT_EQ(EventResultName(EventResult::kTimedOut), "timed_out");
}

TEST(WireTest, ControlRequestAndReplyRoundTrip) {
  for (const ControlCommand c : {ControlCommand::kStatus, ControlCommand::kExit,
                                 ControlCommand::kReload, ControlCommand::kSettle,
                                 ControlCommand::kMonitor, ControlCommand::kUnmonitor}) {
    EXPECT_EQ(ControlCommandFromName(ControlCommandName(c)), c);
  }
  ControlRequest request{.cookie = 77, .command = ControlCommand::kSettle,
                         .options = {{"TIMEOUT_MS", "5000"}, {"COMMAND", "not-the-command"}}};
  absl::StatusOr<WireMessage> m = ParseWireMessage(EncodeWireMessage(ControlRequestMessage(request)));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ControlRequest> back = ControlRequestFromMessage(*std::move(m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->cookie, 77u);
  EXPECT_EQ(back->command, ControlCommand::kSettle);
  EXPECT_THAT(back->options,
              ElementsAre(Pair("TIMEOUT_MS", "5000"), Pair("COMMAND", "not-the-command")));

  ControlReply reply{.cookie = 77, .ok = false, .message = "no such thing",
                     .fields = {{"received", "12"}, {"dropped_bad_seqnum", "1"}}};
  m = ParseWireMessage(EncodeWireMessage(ControlReplyMessage(reply)));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ControlReply> rback = ControlReplyFromMessage(*std::move(m));
  ASSERT_TRUE(rback.ok()) << rback.status();
  EXPECT_EQ(rback->cookie, 77u);
  EXPECT_FALSE(rback->ok);
  EXPECT_EQ(rback->message, "no such thing");
  EXPECT_THAT(rback->fields, ElementsAre(Pair("received", "12"), Pair("dropped_bad_seqnum", "1")));

  // No MESSAGE: it is omitted, and a data field named MESSAGE later stays data.
  ControlReply plain{.cookie = 1, .ok = true, .message = "", .fields = {{"x", "1"}}};
  m = ParseWireMessage(EncodeWireMessage(ControlReplyMessage(plain)));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->fields.size(), 2u);
  rback = ControlReplyFromMessage(*std::move(m));
  ASSERT_TRUE(rback.ok());
  EXPECT_TRUE(rback->ok);
  EXPECT_EQ(rback->message, "");
  EXPECT_THAT(rback->fields, ElementsAre(Pair("x", "1")));
}

// Found by //testing/fuzz:control_fuzz: STATUS=ok, MESSAGE=, MESSAGE=reload... decoded to an
// empty message and a datum named MESSAGE, which re-encoded without the empty MESSAGE and so
// came back as the message. A reply must survive the wire whatever its data is named.
TEST(WireTest, ControlReplyWithADatumNamedMessageRoundTrips) {
  const std::string datagram = EncodeWireMessage(WireMessage{
      .type = WireType::kControlReply,
      .cookie = 0,
      .fields = {{"STATUS", "ok"}, {"MESSAGE", ""}, {"MESSAGE", "reloadereloaded"}}});
  absl::StatusOr<WireMessage> m = ParseWireMessage(datagram);
  ASSERT_TRUE(m.ok()) << m.status();
  const absl::StatusOr<ControlReply> reply = ControlReplyFromMessage(*std::move(m));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->message, "");
  EXPECT_THAT(reply->fields, ElementsAre(Pair("MESSAGE", "reloadereloaded")));

  // Encoding writes the empty MESSAGE back, so the datum stays a datum.
  EXPECT_EQ(EncodeWireMessage(ControlReplyMessage(*reply)), datagram);
  m = ParseWireMessage(EncodeWireMessage(ControlReplyMessage(*reply)));
  ASSERT_TRUE(m.ok()) << m.status();
  const absl::StatusOr<ControlReply> again = ControlReplyFromMessage(*std::move(m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->message, "");
  EXPECT_THAT(again->fields, ElementsAre(Pair("MESSAGE", "reloadereloaded")));

  // A real message before such a datum still works as before.
  const ControlReply with_text{.cookie = 3, .ok = false, .message = "why",
                               .fields = {{"MESSAGE", "datum"}}};
  m = ParseWireMessage(EncodeWireMessage(ControlReplyMessage(with_text)));
  ASSERT_TRUE(m.ok()) << m.status();
  const absl::StatusOr<ControlReply> text_back = ControlReplyFromMessage(*std::move(m));
  ASSERT_TRUE(text_back.ok()) << text_back.status();
  EXPECT_EQ(text_back->message, "why");
  EXPECT_THAT(text_back->fields, ElementsAre(Pair("MESSAGE", "datum")));
}

TEST(WireTest, MonitorEventRoundTripEvenWithEventKeysNamedResult) {
  absl::StatusOr<Event> event = EventFromFields(
      {{"ACTION", "change"}, {"DEVPATH", "/devices/x"}, {"RESULT", "from-the-driver"}});
  ASSERT_TRUE(event.ok());
  const MonitorEvent me{.event = *event, .result = EventResult::kFailed, .duration_us = 1234};
  absl::StatusOr<WireMessage> m = ParseWireMessage(EncodeWireMessage(MonitorEventMessage(me, 5)));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->cookie, 5u);
  absl::StatusOr<MonitorEvent> back = MonitorEventFromMessage(*std::move(m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->result, EventResult::kFailed);
  EXPECT_EQ(back->duration_us, 1234u);
  EXPECT_EQ(back->event.env, event->env);
  EXPECT_EQ(back->event.Get("RESULT"), "from-the-driver");
}

// The largest event EventFromEnv accepts (64 variables, kMaxEventEnvBytes) still fits in a
// monitor message, so the daemon can always forward what it accepted.
TEST(WireTest, LargestValidEventFitsInAMonitorMessage) {
  EnvVars env = {{"ACTION", "offline"}, {"DEVPATH", "/devices/x"}};
  for (int i = 0; env.size() < kMaxEventVariables; ++i) env.emplace_back(absl::StrCat("V", i), "");
  size_t bytes = 0;
  for (const auto& [k, v] : env) bytes += k.size() + v.size() + 2;
  env.back().second.assign(kMaxEventEnvBytes - bytes, 'z');
  absl::StatusOr<Event> event = EventFromFields(env);
  ASSERT_TRUE(event.ok()) << event.status();
  const MonitorEvent me{.event = *event, .result = EventResult::kTimedOut,
                        .duration_us = 18446744073709551615u};
  const std::string bytes_out = EncodeWireMessage(MonitorEventMessage(me, 0xffffffff));
  EXPECT_LE(bytes_out.size(), kMaxWireBytes);
  absl::StatusOr<WireMessage> m = ParseWireMessage(bytes_out);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(MonitorEventFromMessage(*std::move(m)).ok());
}

struct RejectCase {
  const char* name;
  std::string datagram;
  DropReason reason;
  const char* message_part;
};

TEST(WireTest, EveryHeaderAndFramingRejection) {
  const std::string env = Env({"ACTION=add", "DEVPATH=/a"});
  const uint32_t len = static_cast<uint32_t>(env.size());
  std::string many;
  for (size_t i = 0; i <= kMaxWireFields; ++i) many += Env({absl::StrCat("K", i, "=v")});
  const std::vector<RejectCase> cases = {
      {"empty", "", DropReason::kTruncated, "shorter than the 16-byte header"},
      {"short header", "HRNG\x01\x01", DropReason::kTruncated, "datagram of 6 bytes"},
      {"oversize", RawMessage("HRNG", 1, 1, 0, 0, kMaxWireBytes, std::string(kMaxWireBytes, 'x')),
       DropReason::kOversize, "at most 8192"},
      {"bad magic", RawMessage("UDEV", 1, 1, 0, 0, len, env), DropReason::kBadMagic,
       "magic 'UDEV'"},
      {"bad version", RawMessage("HRNG", 2, 1, 0, 0, len, env), DropReason::kBadVersion,
       "protocol version 2"},
      {"type zero", RawMessage("HRNG", 1, 0, 0, 0, len, env), DropReason::kBadType,
       "unknown message type 0"},
      {"type six", RawMessage("HRNG", 1, 6, 0, 0, len, env), DropReason::kBadType,
       "unknown message type 6"},
      {"unknown flag", RawMessage("HRNG", 1, 1, 0x8000, 0, len, env), DropReason::kBadFlags,
       "0x8000"},
      {"want ack on ack", RawMessage("HRNG", 1, 2, 1, 0, len, env), DropReason::kBadFlags,
       "want-ack flag on a ack"},
      {"length says more", RawMessage("HRNG", 1, 1, 0, 0, len + 1, env), DropReason::kTruncated,
       "declares"},
      {"length says less", RawMessage("HRNG", 1, 1, 0, 0, len - 1, env),
       DropReason::kTrailingData, "1 bytes after"},
      {"last not terminated", RawMessage("HRNG", 1, 1, 0, 0, 5, std::string("A=1\0B", 5)),
       DropReason::kTruncated, "last field 'B'"},
      {"empty field", RawMessage("HRNG", 1, 1, 0, 0, 6, std::string("A=1\0\0\0", 6)),
       DropReason::kBadVariable, "NUL inside the env block at offset 20"},
      {"no equals", RawMessage("HRNG", 1, 1, 0, 0, 4, std::string("ABC\0", 4)),
       DropReason::kBadVariable, "field 'ABC' has no '='"},
      {"empty key", RawMessage("HRNG", 1, 1, 0, 0, 3, std::string("=v\0", 3)),
       DropReason::kBadVariable, "empty key"},
      {"control byte key", RawMessage("HRNG", 1, 1, 0, 0, 4, std::string("\x01=v\0", 4)),
       DropReason::kBadVariable, "key '\\x01'"},
      {"too many fields",
       RawMessage("HRNG", 1, 4, 0, 0, static_cast<uint32_t>(many.size()), many),
       DropReason::kTooManyVariables, "more than 256 fields"},
  };
  for (const RejectCase& c : cases) {
    const absl::StatusOr<WireMessage> m = ParseWireMessage(c.datagram);
    EXPECT_EQ(ReasonOf(m), c.reason) << c.name << ": " << m.status();
    EXPECT_THAT(m.status().message(), HasSubstr(c.message_part)) << c.name;
  }
}

// The event inside a wire message is rejected exactly like the same env from the kernel.
TEST(WireTest, EventValidationIsSharedWithTheKernelParser) {
  const std::vector<std::pair<EnvVars, DropReason>> cases = {
      {{{"DEVPATH", "/a"}}, DropReason::kBadAction},
      {{{"ACTION", "add"}}, DropReason::kBadDevpath},
      {{{"ACTION", "add"}, {"DEVPATH", "a"}}, DropReason::kBadDevpath},
      {{{"ACTION", "add"}, {"DEVPATH", "/a"}, {"SEQNUM", "x"}}, DropReason::kBadSeqnum},
      {{{"ACTION", "add"}, {"DEVPATH", "/a"}, {"ACTION", "add"}}, DropReason::kBadVariable},
  };
  for (const auto& [env, reason] : cases) {
    WireMessage m{.type = WireType::kEvent, .flags = 0, .cookie = 1, .fields = env};
    absl::StatusOr<WireMessage> parsed = ParseWireMessage(EncodeWireMessage(m));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const absl::StatusOr<Event> wire_event = EventFromMessage(*std::move(parsed));
    EXPECT_EQ(ReasonOf(wire_event), reason) << wire_event.status();

    Event for_kernel;
    for_kernel.action = "add";
    for_kernel.devpath = "/a";
    for_kernel.env = env;
    const absl::StatusOr<Event> kernel_event = ParseKernelUevent(EncodeKernelUevent(for_kernel));
    EXPECT_EQ(ReasonOf(kernel_event), reason) << kernel_event.status();
  }
  EnvVars many = {{"ACTION", "add"}, {"DEVPATH", "/a"}};
  for (int i = 0; i < 63; ++i) many.emplace_back(absl::StrCat("V", i), "1");
  EXPECT_EQ(ReasonOf(EventFromFields(many)), DropReason::kTooManyVariables);
}

TEST(WireTest, TypedDecodersRejectWrongTypesAndBadFields) {
  const WireMessage event_msg = EventMessage(SampleEvent(), 1, false);
  EXPECT_EQ(ReasonOf(AckFromMessage(event_msg)), DropReason::kBadType);
  EXPECT_EQ(ReasonOf(ControlRequestFromMessage(event_msg)), DropReason::kBadType);
  EXPECT_EQ(ReasonOf(ControlReplyFromMessage(event_msg)), DropReason::kBadType);
  EXPECT_EQ(ReasonOf(MonitorEventFromMessage(event_msg)), DropReason::kBadType);
  EXPECT_EQ(ReasonOf(EventFromMessage(AckMessage(Ack{}))), DropReason::kBadType);
  EXPECT_THAT(AckFromMessage(event_msg).status().message(),
              HasSubstr("expected a ack message, got event"));

  auto with = [](WireType type, EnvVars fields) {
    return WireMessage{.type = type, .flags = 0, .cookie = 0, .fields = std::move(fields)};
  };
  EXPECT_EQ(ReasonOf(AckFromMessage(with(WireType::kAck, {}))), DropReason::kBadField);
  EXPECT_EQ(ReasonOf(AckFromMessage(with(WireType::kAck, {{"RESULT", "great"}}))),
            DropReason::kBadField);
  EXPECT_EQ(ReasonOf(AckFromMessage(with(WireType::kAck, {{"RESULT", "handled"},
                                                          {"SEQNUM", "-3"}}))),
            DropReason::kBadField);
  EXPECT_EQ(ReasonOf(ControlRequestFromMessage(with(WireType::kControlRequest, {}))),
            DropReason::kBadField);
  EXPECT_EQ(ReasonOf(ControlRequestFromMessage(
                with(WireType::kControlRequest, {{"X", "1"}, {"COMMAND", "status"}}))),
            DropReason::kBadField);
  const absl::StatusOr<ControlRequest> bad_cmd = ControlRequestFromMessage(
      with(WireType::kControlRequest, {{"COMMAND", "reboot"}}));
  EXPECT_EQ(ReasonOf(bad_cmd), DropReason::kBadField);
  EXPECT_THAT(bad_cmd.status().message(), HasSubstr("unknown COMMAND 'reboot'"));
  EXPECT_EQ(ReasonOf(ControlReplyFromMessage(with(WireType::kControlReply, {{"STATUS", "meh"}}))),
            DropReason::kBadField);
  EXPECT_EQ(ReasonOf(MonitorEventFromMessage(with(
                WireType::kMonitorEvent,
                {{"RESULT", "handled"}, {"ACTION", "add"}, {"DEVPATH", "/a"}}))),
            DropReason::kBadField);
  EXPECT_EQ(ReasonOf(MonitorEventFromMessage(with(
                WireType::kMonitorEvent,
                {{"RESULT", "handled"}, {"DURATION_US", "5"}, {"ACTION", "add"}}))),
            DropReason::kBadDevpath);
}

TEST(WireTest, PrefixesAndCorruptionsNeverCrash) {
  const std::string d = EncodeWireMessage(EventMessage(SampleEvent(), 0x12345678, true));
  for (size_t n = 0; n < d.size(); ++n) {
    const absl::StatusOr<WireMessage> m = ParseWireMessage(absl::string_view(d).substr(0, n));
    EXPECT_FALSE(m.ok()) << n;  // the length field makes every strict prefix invalid
    EXPECT_TRUE(DropReasonOf(m.status()).has_value()) << m.status();
  }
  for (size_t i = 0; i < d.size(); ++i) {
    for (const char c : {'\0', '=', '\x01', '\xff'}) {
      std::string m = d;
      m[i] = c;
      absl::StatusOr<WireMessage> parsed = ParseWireMessage(m);
      if (!parsed.ok()) {
        EXPECT_TRUE(DropReasonOf(parsed.status()).has_value()) << parsed.status();
        continue;
      }
      if (parsed->type != WireType::kEvent) continue;
      const absl::StatusOr<Event> e = EventFromMessage(*std::move(parsed));
      if (!e.ok()) {
        EXPECT_TRUE(DropReasonOf(e.status()).has_value()) << e.status();
      }
    }
  }
}

}  // namespace
}  // namespace hotring::hotplug
