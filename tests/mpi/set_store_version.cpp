// Test helper: rewrites a store's `version` attribute (to fake a store of another version).
#include <hdf5.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: set_store_version STORE VERSION\n");
    return 2;
  }
  hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) return 1;
  hid_t a = H5Aopen(f, "version", H5P_DEFAULT);
  int v = std::atoi(argv[2]);
  herr_t rc = H5Awrite(a, H5T_NATIVE_INT, &v);
  H5Aclose(a);
  H5Fclose(f);
  return rc < 0;
}
