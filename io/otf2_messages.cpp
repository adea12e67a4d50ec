#include "io/otf2_messages.h"

#include <cstdarg>
#include <cstdio>

namespace perfsift::io {

namespace {

OTF2_ErrorCode keep_message(void *, const char *, uint64_t, const char *, OTF2_ErrorCode code, const char *fmt,
                            va_list va) {
  char buf[512] = "";
  if (fmt) std::vsnprintf(buf, sizeof buf, fmt, va);
  otf2_message() = std::string(OTF2_Error_GetName(code)) + (buf[0] ? std::string(": ") + buf : std::string());
  return code;
}

}  // namespace

std::string &otf2_message() {
  thread_local std::string message;
  return message;
}

Otf2MessageCapture::Otf2MessageCapture() : m_previous(OTF2_Error_RegisterCallback(keep_message, nullptr)) {
  otf2_message().clear();
}

Otf2MessageCapture::~Otf2MessageCapture() { OTF2_Error_RegisterCallback(m_previous, nullptr); }

std::string Otf2MessageCapture::quoted(OTF2_ErrorCode code) {
  if (otf2_message().empty() && code != OTF2_SUCCESS) otf2_message() = OTF2_Error_GetName(code);
  return otf2_message().empty() ? "" : " (OTF2: " + otf2_message() + ")";
}

}  // namespace perfsift::io
