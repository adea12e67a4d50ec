// An OTF2 archive opened for reading, for perfsift's importer (io/otf2_import.h): the
// library's reader, closed on every path, and its failures as one-line io::Error messages
// naming the anchor file. Internal to io/.
#pragma once

#include <otf2/otf2.h>

#include <filesystem>
#include <string>

#include "io/otf2_messages.h"
#include "io/trace_store.h"

namespace perfsift::io::otf2_read {

// The archive's reader; closed (and the library's error printing restored) on every path.
class Reader {
 public:
  explicit Reader(const std::string &anchor) : m_anchor(anchor) {
    m_r = OTF2_Reader_Open(anchor.c_str());
    if (!m_r) fail("not an OTF2 archive (cannot read its anchor file)", "give the .otf2 anchor file Score-P wrote");
    check(OTF2_Reader_SetSerialCollectiveCallbacks(m_r), "cannot set up the reader", "");
  }
  ~Reader() {
    if (m_r) OTF2_Reader_Close(m_r);
  }
  Reader(const Reader &) = delete;
  Reader &operator=(const Reader &) = delete;
  OTF2_Reader *get() const { return m_r; }
  const std::string &anchor() const { return m_anchor; }

  [[noreturn]] void fail(const std::string &what, const std::string &fix) const {
    std::string m = m_anchor + ": " + what + Otf2MessageCapture::quoted();
    if (!fix.empty()) m += "; " + fix;
    throw Error(m);
  }
  void check(OTF2_ErrorCode e, const std::string &what, const std::string &fix) const {
    if (e != OTF2_SUCCESS) {
      Otf2MessageCapture::quoted(e);
      fail(what, fix);
    }
  }

 private:
  Otf2MessageCapture m_messages;  // first: constructed before the reader opens, restored after it closes
  std::string m_anchor;
  OTF2_Reader *m_r = nullptr;
};

// The anchor file's path without its extension: where the .def file and the directory of
// event files lie.
inline std::string stem_of(const std::string &anchor) {
  std::filesystem::path p(anchor);
  return (p.parent_path() / p.stem()).string();
}

}  // namespace perfsift::io::otf2_read
