#include "io/build_id.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <vector>

#include "io/hdf5_util.h"

namespace perfsift::io {

namespace {

constexpr uint64_t kMaxNotesBytes = 1 << 16;  // a build-id note is tens of bytes

template <class T>
bool read_at(std::ifstream &in, uint64_t offset, T &out) {
  in.seekg(static_cast<std::streamoff>(offset));
  return static_cast<bool>(in.read(reinterpret_cast<char *>(&out), sizeof out));
}

// The build-id among the notes at [offset, offset + size) of the file, or "".
std::string build_id_in_notes(std::ifstream &in, uint64_t offset, uint64_t size) {
  std::vector<unsigned char> b(std::min(size, kMaxNotesBytes));
  in.seekg(static_cast<std::streamoff>(offset));
  if (b.empty() || !in.read(reinterpret_cast<char *>(b.data()), static_cast<std::streamsize>(b.size()))) return "";
  const auto align4 = [](uint64_t n) { return (n + 3) & ~uint64_t{3}; };
  for (uint64_t at = 0; at + sizeof(Elf64_Nhdr) <= b.size();) {
    Elf64_Nhdr h;
    std::memcpy(&h, b.data() + at, sizeof h);
    const uint64_t name = at + sizeof h, desc = name + align4(h.n_namesz), next = desc + align4(h.n_descsz);
    if (next > b.size()) break;
    if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 && std::memcmp(b.data() + name, "GNU", 4) == 0) {
      static const char hex[] = "0123456789abcdef";
      std::string id;
      for (uint64_t i = 0; i < h.n_descsz; ++i) {
        id += hex[b[desc + i] >> 4];
        id += hex[b[desc + i] & 15];
      }
      return id;
    }
    at = next;
  }
  return "";
}

}  // namespace

std::string elf_build_id(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh;
  if (!in || !read_at(in, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
    return "";
  // Sections first: a separated debug file keeps its notes there, its segments empty.
  for (unsigned i = 0; eh.e_shentsize == sizeof(Elf64_Shdr) && i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!read_at(in, eh.e_shoff + uint64_t{i} * sizeof sh, sh)) break;
    if (sh.sh_type != SHT_NOTE) continue;
    std::string id = build_id_in_notes(in, sh.sh_offset, sh.sh_size);
    if (!id.empty()) return id;
  }
  for (unsigned i = 0; eh.e_phentsize == sizeof(Elf64_Phdr) && i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read_at(in, eh.e_phoff + uint64_t{i} * sizeof ph, ph)) break;
    if (ph.p_type != PT_NOTE) continue;
    std::string id = build_id_in_notes(in, ph.p_offset, ph.p_filesz);
    if (!id.empty()) return id;
  }
  return "";
}

std::string debug_file_for(const std::string &dir, const std::string &module, const std::string &id) {
  if (id.size() > 2) {
    const std::string by_id = dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
    if (elf_build_id(by_id) == id) return by_id;
  }
  const std::string same_name = dir + "/" + module.substr(module.rfind('/') + 1);
  if (!id.empty() && elf_build_id(same_name) == id) return same_name;
  return "";
}

std::vector<std::pair<std::string, std::string>> read_module_build_ids(const std::string &store) {
  using namespace h5;
  SilenceHdf5 quiet;
  Ctx ck(store);
  Handle f(ck(H5Fopen(store.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "cannot open the trace store"), H5Fclose);
  if (H5Lexists(f, "modules", H5P_DEFAULT) <= 0) return {};
  const auto paths = read_strings(ck, f, "modules/path"), ids = read_strings(ck, f, "modules/build_id");
  if (paths.size() != ids.size())
    throw Error(store + ": /modules/path and /modules/build_id differ in length (damaged store)");
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < paths.size(); ++i) out.emplace_back(paths[i], ids[i]);
  return out;
}

}  // namespace perfsift::io
