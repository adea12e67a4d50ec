#!/usr/bin/python3
"""Writes the trace-store fuzzer's seeds (corpus/trace_store/) with this build's perfsift.

usage: make_trace_store_seeds.py PERFSIFT CORPUS_DIR

Two small stores from `perfsift synth`, and the damaged stores that each once crashed or
misled the reader, made again from the first: a store of another version is refused at
open, so the seeds are remade whenever the version changes (docs/trace-store.md,
"Compatibility"). regress_global_heap_object_size.h5 is damaged below HDF5's API (a
global heap object's size) and refused before the version is read: it is kept as it is. Run with Debian's /usr/bin/python3, which has h5py.
"""
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

SYNTH = {
    "synth_2ranks.h5": ["--ranks", "2", "--regions", "solve,io", "--events-per-rank", "8", "--message-bytes", "8192"],
    "synth_3ranks_counter.h5": ["--ranks", "3", "--regions", "3", "--events-per-rank", "12", "--message-bytes", "8192",
                                "--counters", "PAPI_TOT_CYC"],
}


def format_attribute_list(f):
    f.attrs.create("format", ["perfsift-trace"] * 40, dtype=h5py.string_dtype())


def version_attribute_array(f):
    f.attrs["version"] = np.arange(64, dtype=np.int32)


def ops_variable_strings(f):
    del f["ops"]
    f.create_dataset("ops", data=["MPI_Send", "MPI_Recv", "MPI_Barrier"], dtype=h5py.string_dtype())


def region_parent_after_child(f):
    parents = f["regions/parent"][:]
    parents[1] = 2
    f["regions/parent"][...] = parents


def events_offsets_negative(f):
    offsets = f["events_offsets"][:]
    offsets[1] = -5
    f["events_offsets"][...] = offsets


def comms_offsets_outside(f):
    offsets = f["comms/members_offsets"][:]
    offsets[-1] = 1 << 40
    f["comms/members_offsets"][...] = offsets


def profile_wrong_shape(f):
    del f["profile/cpu"]
    f.create_dataset("profile/cpu", data=np.zeros((1, 1)))


DAMAGE = [format_attribute_list, version_attribute_array, ops_variable_strings, region_parent_after_child, events_offsets_negative, comms_offsets_outside,
          profile_wrong_shape]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    perfsift, corpus = argv[1], Path(argv[2])
    for name, args in SYNTH.items():
        subprocess.run([perfsift, "synth", "-o", str(corpus / name), *args], check=True, stdout=subprocess.DEVNULL)
    for damage in DAMAGE:
        target = corpus / f"regress_{damage.__name__}.h5"
        shutil.copy(corpus / "synth_2ranks.h5", target)
        with h5py.File(target, "r+") as f:
            damage(f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
