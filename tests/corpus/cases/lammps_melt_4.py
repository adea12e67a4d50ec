"""LAMMPS examples/melt on 4 ranks (a 2 x 2 x 1 grid): the same known answer as
lammps_melt (Comm's %total in LAMMPS's breakdown table against perfsift's MPI share);
in the full corpus only (4 ranks oversubscribe the 2-core CI runners)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lammps_melt import BINARY, INPUT, PACKAGES, TIMEOUT, agree, inputs, parse  # noqa: E402,F401

RANKS = 4

EXPECTED_FAILURES = {
    "Hercule recognises no model the app does not follow":
        "divide-and-conquer recognised on a 2 x 2 process grid. Hercule recognition (pipeline/stages/diagnosis/recognition.cpp, kernels/hercule.cpp score_divide_and_conquer) looks at the communication graph only: on 4 ranks every pair of a 2 x 2 process grid (row partners 0-1, 2-3, column partners 0-2, 1-3) is a bisection partner of recursive halving, so pow2 = levels = 1, and the only other factor, 1 - forwarding share, is high for halo exchanges; the phase order divide-and-conquer has (each level once per phase, levels in order) is not checked",
}
