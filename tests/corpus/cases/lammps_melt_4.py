"""LAMMPS examples/melt on 4 ranks (a 2 x 2 x 1 grid): the same known answer as
lammps_melt (Comm's %total in LAMMPS's breakdown table against perfsift's MPI share);
in the full corpus only (4 ranks oversubscribe the 2-core CI runners)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lammps_melt import BINARY, INPUT, PACKAGES, TIMEOUT, agree, inputs, parse  # noqa: E402,F401

RANKS = 4
