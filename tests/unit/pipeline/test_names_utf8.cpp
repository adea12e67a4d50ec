// Names of any bytes in the reports (pipeline/format/json_writer.h, text.h): JSON stays
// valid UTF-8 (ill-formed pieces as U+FFFD, controls escaped, HTML-safe when embedded),
// the text report shows control characters as escapes.
#include <gtest/gtest.h>

#include <string>

#include "pipeline/format/json_writer.h"
#include "pipeline/format/text.h"
#include "pipeline/format/utf8.h"

using perfsift::pipeline::clip;
using perfsift::pipeline::JsonWriter;
using perfsift::pipeline::printable;
using perfsift::pipeline::utf8_piece;
using perfsift::pipeline::wrap;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// Whether s is well-formed UTF-8 throughout.
bool valid_utf8(const std::string &s) {
  for (size_t i = 0; i < s.size(); i += utf8_piece(s, i).size)
    if (!utf8_piece(s, i).valid) return false;
  return true;
}

std::string json_string(const std::string &s, bool compact = false) {
  JsonWriter j(compact);
  j.value(s);
  std::string out = j.take();
  out.pop_back();  // the final newline
  return out;
}

}  // namespace

TEST(Utf8Pieces, WellFormedAndMaximalSubparts) {
  EXPECT_TRUE(utf8_piece("a", 0).valid);
  EXPECT_EQ(utf8_piece("\xC3\xA9", 0).size, 2u);
  EXPECT_EQ(utf8_piece("\xC3\xA9", 0).code, 0xe9u);
  EXPECT_EQ(utf8_piece("\xE2\x80\xA8", 0).code, 0x2028u);
  EXPECT_EQ(utf8_piece("\xF0\x9F\x98\x80", 0).code, 0x1f600u);
  // Ill-formed: a stray continuation, a bad lead, overlong, surrogate, above U+10FFFF.
  for (const std::string bad : {"\x80", "\xFF", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
    EXPECT_FALSE(utf8_piece(bad, 0).valid) << printable(bad);
    EXPECT_EQ(utf8_piece(bad, 0).size, 1u) << printable(bad);
  }
  // A truncated sequence is one piece (as Python's and browsers' decoders replace it).
  EXPECT_FALSE(utf8_piece("\xE2\x82"
                          "a",
                          0)
                   .valid);
  EXPECT_EQ(utf8_piece("\xE2\x82"
                       "a",
                       0)
                .size,
            2u);
  EXPECT_EQ(utf8_piece("\xF0\x9F\x98", 0).size, 3u);
}

TEST(JsonNames, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(json_string("a\xFF"
                        "b"),
            "\"a" + kFffd + "b\"");
  EXPECT_EQ(json_string("\xFF\xFE"), "\"" + kFffd + kFffd + "\"");
  EXPECT_EQ(json_string("x\xE2\x82"), "\"x" + kFffd + "\"");
  EXPECT_EQ(json_string("\xC0\xAF"), "\"" + kFffd + kFffd + "\"");
  EXPECT_EQ(json_string("\xED\xA0\x80"), "\"" + kFffd + kFffd + kFffd + "\"");
  for (int b = 0; b < 256; ++b) {
    const std::string s = json_string(std::string("n") + static_cast<char>(b) + "m");
    EXPECT_TRUE(valid_utf8(s)) << b;
    for (unsigned char c : s) EXPECT_GE(c, 0x20) << b;
  }
}

TEST(JsonNames, WellFormedTextPassesThrough) {
  EXPECT_EQ(json_string("caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80"), "\"caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80\"");
  EXPECT_EQ(json_string("solve/smooth"), "\"solve/smooth\"");
  EXPECT_EQ(json_string("a<b>&c"), "\"a<b>&c\"");  // the file report: readable
}

TEST(JsonNames, ControlsAndSeparatorsAreEscaped) {
  EXPECT_EQ(json_string("a\tb\nc\rd\be\ff"), R"("a\tb\nc\rd\be\ff")");
  EXPECT_EQ(json_string(std::string("\x01\x1b[31m\x7f", 7)), R"("\u0001\u001b[31m\u007f")");
  EXPECT_EQ(json_string(std::string("\0", 1)), R"("\u0000")");
  EXPECT_EQ(json_string("q\"b\\"), R"("q\"b\\")");
  EXPECT_EQ(json_string("l\xE2\x80\xA8p\xE2\x80\xA9"), R"("l\u2028p\u2029")");
}

TEST(JsonNames, EmbeddedInHtmlNothingEndsTheScript) {
  const std::string s = json_string("</script><!-- & \xE2\x80\xA8", true);
  EXPECT_EQ(s, R"("\u003c/script\u003e\u003c!-- \u0026 \u2028")");
  EXPECT_EQ(s.find('<'), std::string::npos);
  // Keys too, and the form can be asked for directly.
  JsonWriter j(false, true);
  j.begin_object().key("<k>").value("v").end_object();
  EXPECT_NE(j.take().find(R"("\u003ck\u003e": "v")"), std::string::npos);
}

TEST(TextNames, ControlsPrintAsEscapes) {
  EXPECT_EQ(printable("a\tb"), R"(a\tb)");
  EXPECT_EQ(printable("a\nb\rc"), R"(a\nb\rc)");
  EXPECT_EQ(printable("\x1b[2J\x7f"), R"(\x1b[2J\x7f)");
  EXPECT_EQ(printable("x\xFFy"), R"(x\xffy)");
  EXPECT_EQ(printable("x\xE2\x82"), R"(x\xe2\x82)");
  EXPECT_EQ(printable("\xC2\x9B"
                      "1m"),
            R"(\u009b1m)");  // C1 CSI
  EXPECT_EQ(printable("abc\xE2\x80\xAE"
                      "def\xE2\x80\xA8"),
            R"(abc\u202edef\u2028)");  // bidi, separator
  EXPECT_EQ(printable("caf\xC3\xA9 <script> \"q\""), "caf\xC3\xA9 <script> \"q\"");
  EXPECT_EQ(printable("line 1\nline\t2\n", true), "line 1\nline\\t2\n");
}

TEST(TextNames, ClipCutsBetweenCharactersAndEscapes) {
  EXPECT_EQ(clip("solve", 10), "solve");
  EXPECT_EQ(clip("a\tb", 10), R"(a\tb)");
  EXPECT_EQ(clip("abcdefgh", 5), "abcd~");
  EXPECT_EQ(clip("ab\tcdef", 4), "ab~");  // "\t" does not fit before the mark
  EXPECT_EQ(clip("ab\xC3\xA9\xC3\xA9", 4), "ab~");
  EXPECT_EQ(clip("abc\xC3\xA9\xC3\xA9", 6), "abc\xC3\xA9~");
  for (size_t n = 1; n < 12; ++n) EXPECT_TRUE(valid_utf8(clip("\xE6\x97\xA5\xE6\x97\xA5\xE6\x97\xA5\xFF", n))) << n;
}

TEST(TextNames, WrapEscapesAndKeepsCharactersWhole) {
  const auto lines = wrap("region a\tb\nc is late", 40, 3);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], R"(region a\tb\nc is late)");
  const std::string word = "\xE6\x97\xA5\xE6\x97\xA5\xE6\x97\xA5\xE6\x97\xA5";  // 12 bytes
  for (const auto &l : wrap(word + " " + word, 7, 5)) EXPECT_TRUE(valid_utf8(l)) << l;
  for (const auto &l : wrap(word + " " + word, 7, 2)) EXPECT_TRUE(valid_utf8(l)) << l;
}
