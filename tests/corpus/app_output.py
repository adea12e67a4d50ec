"""Parsers of the applications' own timing output (what the corpus compares perfsift with).

Each returns a dict; a missing table is a ValueError naming what was looked for, so a
changed output format fails the test with one line instead of a KeyError."""
import re


def lammps(text):
    """LAMMPS (src/finish.cpp): 'Loop time of T on P procs for S steps with A atoms' and the
    'MPI task timing breakdown' table: Section | min time | avg time | max time | %varavg | %total."""
    m = re.search(r"Loop time of ([\d.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", text)
    if not m:
        raise ValueError("no 'Loop time of ... on P procs for S steps' line in the LAMMPS output")
    out = {"loop_s": float(m.group(1)), "procs": int(m.group(2)), "steps": int(m.group(3)), "atoms": int(m.group(4))}
    sections = {}
    table = text[text.find("MPI task timing breakdown:"):]
    for line in table.splitlines()[3:]:
        cells = [c.strip() for c in line.split("|")]
        if len(cells) != 6:
            break
        name, mn, avg, mx, var, total = cells
        sections[name] = {"min_s": float(mn) if mn else None, "avg_s": float(avg), "max_s": float(mx) if mx else None,
                          "varavg_pct": float(var) if var else None, "total_pct": float(total)}
    if "Pair" not in sections or "Comm" not in sections:
        raise ValueError("no 'MPI task timing breakdown' table with Pair and Comm rows in the LAMMPS output")
    out["sections"] = sections
    m = re.search(r"Nlocal:\s+([\d.]+) ave\s+(\d+) max\s+(\d+) min", text)
    if m:
        out["nlocal_ave"], out["nlocal_max"], out["nlocal_min"] = float(m.group(1)), int(m.group(2)), int(m.group(3))
    return out


def hpcc(text):
    """hpcc's hpccoutf.txt summary ('Begin of Summary section.' ... name=value lines) and the
    per-test 'Begin of <Test> section' markers with their times."""
    start = text.find("Begin of Summary section.")
    if start < 0:
        raise ValueError("no 'Begin of Summary section.' in hpccoutf.txt (hpcc did not finish)")
    summary = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("End of Summary section."):
            break
        if "=" in line:
            k, v = line.split("=", 1)
            try:
                summary[k.strip()] = float(v)
            except ValueError:
                summary[k.strip()] = v.strip()
    return {"summary": summary, "HPL_Tflops": summary.get("HPL_Tflops"), "HPL_time_s": summary.get("HPL_time"),
            "PTRANS_time_s": summary.get("PTRANS_time"), "CommWorldProcs": summary.get("CommWorldProcs")}


def qe(text):
    """Quantum ESPRESSO's timing report (clocks.f90): 'name : Xs CPU Ys WALL ( N calls)' and
    'PWSCF : Xs CPU Ys WALL'."""
    clocks = {}
    for m in re.finditer(r"^\s+(\S[^:\n]*?)\s*:\s*([\d.]+)s CPU\s+([\d.]+)s WALL(?:\s*\(\s*(\d+) calls\))?", text, re.M):
        clocks[m.group(1)] = {"cpu_s": float(m.group(2)), "wall_s": float(m.group(3)),
                              "calls": int(m.group(4)) if m.group(4) else None}
    # Times above a minute print as '1m23.45s': not expected for the tiny inputs here.
    if "PWSCF" not in clocks:
        raise ValueError("no 'PWSCF : ... WALL' line in the pw.x output (the run did not finish)")
    m = re.search(r"^!\s+total energy\s+=\s+([-\d.]+) Ry", text, re.M)
    return {"clocks": clocks, "PWSCF_wall_s": clocks["PWSCF"]["wall_s"], "energy_Ry": float(m.group(1)) if m else None}


def netpipe(text):
    """NetPIPE: one line per message size, '  N:  BYTES bytes  REPS times -->  MBPS Mbps in  USEC usec'."""
    rows = [{"bytes": int(m.group(1)), "times": int(m.group(2)), "mbps": float(m.group(3)), "usec": float(m.group(4))}
            for m in re.finditer(r"^\s*\d+:\s+(\d+) bytes\s+(\d+) times -->\s+([\d.]+) Mbps in\s+([\d.]+) usec", text, re.M)]
    if not rows:
        raise ValueError("no 'N: B bytes R times --> X Mbps in Y usec' lines in the NetPIPE output")
    return {"sizes": rows, "n_sizes": len(rows)}


def meep(text):
    """Meep's 'Field time usage:' block (fields::print_times): 'name: T s +/- S s' per
    activity, the mean over processes and its spread."""
    start = text.find("Field time usage:")
    if start < 0:
        raise ValueError("no 'Field time usage:' block in the meep output")
    times = {}
    for line in text[start:].splitlines()[1:]:
        m = re.match(r"\s+(\S[^:]*):\s+([\d.eE+-]+) s(?:\s+\+/-\s+([\d.eE+-]+) s)?", line)
        if not m:
            if line.strip():
                break
            continue
        times[m.group(1).strip()] = {"mean_s": float(m.group(2)), "stddev_s": float(m.group(3)) if m.group(3) else 0.0}
    if not times:
        raise ValueError("an empty 'Field time usage:' block in the meep output")
    return {"times": times}
