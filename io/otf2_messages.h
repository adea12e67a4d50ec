// What the OTF2 library said last, for perfsift's one-line errors: while an archive is read
// or written, the library's own printing to stderr is replaced by keeping its message.
#pragma once
#include <otf2/otf2.h>

#include <string>

namespace perfsift::io {

// The library's last message on this thread ("" when it said nothing since clear()).
std::string &otf2_message();

// Keeps the library's messages (instead of printing them) for as long as it lives.
class Otf2MessageCapture {
 public:
  Otf2MessageCapture();
  ~Otf2MessageCapture();
  Otf2MessageCapture(const Otf2MessageCapture &) = delete;
  Otf2MessageCapture &operator=(const Otf2MessageCapture &) = delete;

  // " (OTF2: message)" when the library said something, else "". An error code the library
  // did not explain becomes the message.
  static std::string quoted(OTF2_ErrorCode code = OTF2_SUCCESS);

 private:
  OTF2_ErrorCallback m_previous = nullptr;
};

}  // namespace perfsift::io
