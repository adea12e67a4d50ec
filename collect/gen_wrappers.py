#!/usr/bin/env python3
"""Generate perfsift's PMPI wrappers (C and Fortran symbols) from mpi_functions.toml.

Usage: gen_wrappers.py SPEC OUTDIR
Writes OUTDIR/ops.h (operation codes, names, groups), OUTDIR/wrappers_c.cpp and
OUTDIR/wrappers_f.cpp. As a module, `expand(spec)` gives the functions the table
wraps (tests/unit/collect/check_wrapper_table.py imports it). No wrapper is written by hand except the few listed under
`manual` in the spec (lifecycle.cpp); every other wrapper is one of the templates
below, chosen by the entry's `kind`.
"""
import re
import sys
import tomllib
from pathlib import Path

# kind -> (code run before the PMPI call, code run after a successful call).
# Both are C++ over the C parameter names; `ev` is the event being recorded.
KIND_RECORDERS = {
    "send": ("", "on_send(ev, count, datatype, dest, tag, comm);"),
    "recv": ("", "on_recv(ev, count, datatype, source, tag, comm, status);"),
    "isend": ("", "on_isend(ev, count, datatype, dest, tag, comm, *request);"),
    "irecv": ("", "on_irecv(ev, count, datatype, source, tag, comm, *request);"),
    "send_init": ("", "on_send_init(ev, count, datatype, dest, tag, comm, *request);"),
    "recv_init": ("", "on_recv_init(ev, count, datatype, source, tag, comm, *request);"),
    "start": ("", "on_start(ev, 1, request);"),
    "startall": ("", "on_start(ev, count, array_of_requests);"),
    "sendrecv": ("", "on_sendrecv(ev, sendcount, sendtype, dest, sendtag, recvcount, recvtype, source, recvtag, comm, status);"),
    "sendrecv_replace": ("", "on_sendrecv(ev, count, datatype, dest, sendtag, count, datatype, source, recvtag, comm, status);"),
    "mrecv": ("const MPI_Message matched = *message;", "on_mrecv(ev, type, matched, status);"),
    "imrecv": ("const MPI_Message matched = *message;", "on_imrecv(ev, count, type, matched, *request);"),
    "probe": ("", "on_probe(ev, source, tag, comm, 1, status);"),
    "iprobe": ("", "on_probe(ev, source, tag, comm, *flag, status);"),
    "mprobe": ("", "on_mprobe(ev, source, tag, comm, 1, status, *message);"),
    "improbe": ("", "on_mprobe(ev, source, tag, comm, *flag, status, *message);"),
    "wait": ("Pending pending(1, request);", "on_completed(ev, pending, 0, status);"),
    "waitall": ("Pending pending(count, array_of_requests);", "on_completed_all(ev, pending, array_of_statuses);"),
    "waitany": ("Pending pending(count, array_of_requests);", "on_completed_index(ev, pending, *index, status);"),
    "waitsome": ("Pending pending(incount, array_of_requests);",
                 "on_completed_some(ev, pending, *outcount, array_of_indices, array_of_statuses);"),
    "test": ("Pending pending(1, request);",
             "if (*flag) on_completed(ev, pending, 0, status); else on_nothing_completed(ev);"),
    "testall": ("Pending pending(count, array_of_requests);",
                "if (*flag) on_completed_all(ev, pending, array_of_statuses); else on_nothing_completed(ev);"),
    "testany": ("Pending pending(count, array_of_requests);",
                "if (*flag) on_completed_index(ev, pending, *index, status); else on_nothing_completed(ev);"),
    "request_free": ("Pending pending(1, request);", "on_request_free(ev, pending);"),
    "cancel": ("Pending pending(1, request);", "on_cancel(ev, pending);"),
    "coll": ("", "on_coll(ev, comm, {root}, {sent}, {recv});"),
    "icoll": ("", "on_icoll(ev, comm, {root}, {sent}, {recv}, *request);"),
    "comm_new": ("", "on_comm_new(ev, {parent}, {new});"),
    "comm_idup": ("", "on_comm_pending(ev, comm);"),
    "comm_free": ("const MPI_Comm freed = *comm;", "on_comm_free(ev, freed);"),
    "file_open": ("", "on_file_open(ev, comm);"),
    "io_read": ("", "on_io(ev, count, datatype, false);"),
    "io_write": ("", "on_io(ev, count, datatype, true);"),
    "plain": ("", ""),
}

GROUPS = ["p2p", "coll", "wait", "probe", "comm", "io", "env"]

HANDLE_F2C = {
    "MPI_Comm": "MPI_Comm_f2c", "MPI_Datatype": "MPI_Type_f2c", "MPI_Request": "MPI_Request_f2c",
    "MPI_Op": "MPI_Op_f2c", "MPI_Group": "MPI_Group_f2c", "MPI_Info": "MPI_Info_f2c",
    "MPI_Message": "MPI_Message_f2c", "MPI_File": "MPI_File_f2c",
}


class Param:
    """One C parameter: `const int recvcounts[]`, `MPI_Request array_of_requests[count]`."""

    def __init__(self, text):
        text = " ".join(text.split())
        m = re.match(r"^(.*?)(\w+)\s*(\[(.*)\])?$", text)
        if not m:
            raise SystemExit(f"gen_wrappers: cannot parse parameter '{text}'")
        base, self.name, bracket, self.length = m.group(1).strip(), m.group(2), m.group(3), m.group(4)
        self.is_array = bracket is not None
        self.const = base.startswith("const ")
        base = base.removeprefix("const ").strip()
        self.pointer = base.endswith("*")
        self.type = base.rstrip("*").strip()
        if self.is_array and not self.length:
            self.length = None

    def c_decl(self):
        const = "const " if self.const else ""
        if self.is_array:
            return f"{const}{self.type} {self.name}[]"
        star = " *" if self.pointer else " "
        return f"{const}{self.type}{star}{self.name}".replace("  ", " ")


def split_args(args):
    parts, depth, cur = [], 0, ""
    for ch in args:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [Param(p) for p in parts]


def nonblocking_variant(fn):
    rest = fn["name"][4:]
    return dict(fn, name="MPI_I" + rest[0].lower() + rest[1:], kind="icoll",
                args=fn["args"] + ", MPI_Request *request", since=3, derived_from=fn["name"])


def expand(spec):
    """The generated wrappers, in table order: every [[fn]] entry of the parsed spec,
    each blocking collective followed by its derived nonblocking variant. Each is a dict
    with at least name, kind, group and args. The hand-written wrappers (spec["manual"])
    are not included."""
    fns = []
    for fn in spec["fn"]:
        if fn["kind"] not in KIND_RECORDERS:
            raise SystemExit(f"gen_wrappers: {fn['name']}: unknown kind '{fn['kind']}'")
        fns.append(fn)
        if fn["kind"] == "coll":
            fns.append(nonblocking_variant(fn))
    return fns


def recorder_code(fn):
    before, after = KIND_RECORDERS[fn["kind"]]
    fields = {"root": fn.get("root", "-1"), "sent": fn.get("sent", "0"), "recv": fn.get("recv", "0"),
              "parent": fn.get("parent", "comm"), "new": fn.get("new", "")}
    return before.format(**fields), after.format(**fields)


IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def identifiers(*code):
    """Every identifier the C++ snippets mention."""
    return {name for c in code for name in IDENTIFIER.findall(c)}


def reads(fn, params):
    """Parameters the recording code reads: (read before the PMPI call, read after it).

    Only these get a C view in the Fortran wrapper (and a substitute status in the
    C wrapper); every other argument goes to the PMPI twin untouched."""
    before, after = recorder_code(fn)
    names = {p.name for p in params}
    return identifiers(before) & names, identifiers(after) & names


def status_substitution_c(params, used):
    """Statuses the user ignores are still needed (wildcard sources): substitute our own,
    for the statuses the recording code reads."""
    lines = []
    for p in params:
        if p.type != "MPI_Status" or p.name not in used:
            continue
        if p.is_array:
            lines.append(f"StatusArray {p.name}_own({p.length}, {p.name});")
            lines.append(f"{p.name} = {p.name}_own.data();")
        elif p.pointer:
            lines.append(f"MPI_Status {p.name}_own;")
            lines.append(f"if ({p.name} == MPI_STATUS_IGNORE) {p.name} = &{p.name}_own;")
    return lines


def gen_c(fn, params):
    name = fn["name"]
    decl = ", ".join(p.c_decl() for p in params)
    call = ", ".join(p.name for p in params)
    before, after = recorder_code(fn)
    read_before, read_after = reads(fn, params)
    body = [
        f"// {name}: template '{fn['kind']}'" + (f", derived from {fn['derived_from']}" if "derived_from" in fn else ""),
        # Exported explicitly: Open MPI's mpi.h gives MPI_* default visibility, MPICH's does not.
        f'extern "C" PERFSIFT_EXPORT int {name}({decl}) {{',
        f"  if (!tracing(Group::{fn['group']})) return P{name}({call});",
        f"  Call call(Op::{name}, __builtin_return_address(0));",
    ]
    if "ev" in identifiers(before, after):
        body.append("  Event &ev = call.ev;")
    body += ["  " + l for l in status_substitution_c(params, read_before | read_after)]
    if before:
        body.append("  " + before)
    body.append(f"  const int rc = P{name}({call});")
    body.append("  call.exit();")
    if after:
        body.append(f"  if (rc == MPI_SUCCESS) {{ const SharedTables shared; {after} }}")
    body.append("  return rc;")
    body.append("}")
    return "\n".join(body)


def fortran_param(p):
    """Parameter of the Fortran symbol: everything by reference."""
    if p.type == "void":
        return f"void *f_{p.name}"
    if p.type in ("MPI_Aint", "MPI_Offset"):
        return f"{p.type} *f_{p.name}"
    return f"MPI_Fint *f_{p.name}"


def fortran_views(p, before, after):
    """C view of a Fortran argument the recording code reads `before` and/or `after` the
    PMPI call: (lines before the call, lines after it, argument to pass to the PMPI twin).

    Inputs are converted before the call. A handle the call may change (requests,
    messages, new communicators) is converted where it is read: before the call, after
    it, or both. Only statuses need a substitute argument (MPI_F_STATUS_IGNORE)."""
    n, f = p.name, f"f_{p.name}"
    if not (before or after):
        return [], [], f
    if p.type == "void":
        c = "const " if p.const else ""
        return [f"{c}void *{n} = f2c_buffer({f});"], [], f
    if p.type in ("MPI_Aint", "MPI_Offset"):
        if p.is_array:
            return [f"const {p.type} *{n} = {f};"], [], f
        return [f"const {p.type} {n} = *{f};"], [], f
    if p.type == "MPI_Status":
        if before:
            raise SystemExit(f"gen_wrappers: status '{n}' read before the call")
        if p.is_array:
            return ([f"FortranStatusArray {n}_f({p.length}, {f});"],
                    [f"StatusArray {n}_own({p.length}, {n}_f);", f"MPI_Status *{n} = {n}_own.data();"],
                    f"{n}_f.data()")
        return ([f"FortranStatus {n}_f({f});"],
                [f"MPI_Status {n}_own = {n}_f.to_c();", f"MPI_Status *{n} = &{n}_own;"], f"{n}_f.data()")
    if p.type in HANDLE_F2C:
        conv = HANDLE_F2C[p.type]
        if p.is_array:
            # MPICH's f2c conversions are macros (integer handles): wrapped to be passed on.
            fn_conv = f"[](MPI_Fint h) {{ return {conv}(h); }}"
            declare = [f"HandleArray<{p.type}> {n}_h({p.length}, {f}, {fn_conv});", f"{p.type} *{n} = {n}_h.data();"]
            if p.const or not after:
                return declare, [], f
            if not before:
                return [], declare, f
            return declare, [f"{n}_h.refresh({f}, {fn_conv});"], f
        if p.pointer:
            declare = [f"{p.type} {n}_h = {conv}(*{f});", f"{p.type} *{n} = &{n}_h;"]
            if p.const or not after:
                return declare, [], f
            if not before:
                return [], declare, f
            return declare, [f"{n}_h = {conv}(*{f});"], f
        return [f"const {p.type} {n} = {conv}(*{f});"], [], f
    if p.type == "int":
        if p.name == "index" and p.pointer:  # Fortran indices are 1-based
            if not before:
                return [], [f"int {n}_c = fortran_index(*{f});", f"int *{n} = &{n}_c;"], f
            return [f"int {n}_c = MPI_UNDEFINED;", f"int *{n} = &{n}_c;"], [f"{n}_c = fortran_index(*{f});"], f
        if p.name == "array_of_indices" and p.is_array:
            declare = [f"IndexArray {n}_c({p.length});", f"int *{n} = {n}_c.data();"]
            convert = [f"{n}_c.from_fortran({f}, *outcount);"]
            if not before:
                return [], declare + convert, f
            return declare, convert, f
        if p.is_array or p.pointer:
            c = "const " if p.const else ""
            return [f"{c}int *{n} = {f};"], [], f
        return [f"const int {n} = *{f};"], [], f
    raise SystemExit(f"gen_wrappers: no Fortran conversion for '{p.type} {p.name}'")


def fortran_plan(fn, params):
    """The C views a Fortran wrapper builds: (lines before the call, lines after it,
    arguments of the PMPI call). Starts from what the recorder reads and adds what
    those views themselves read (array lengths, `*outcount`)."""
    names = {p.name for p in params}
    read_before, read_after = reads(fn, params)
    while True:
        views = {p.name: fortran_views(p, p.name in read_before, p.name in read_after) for p in params}
        more_before = set().union(*(identifiers(*v[0]) & names - {q} for q, v in views.items()))
        more_after = set().union(*(identifiers(*v[1]) & names - {q} for q, v in views.items()))
        if more_before <= read_before and more_after <= read_after:
            break
        read_before |= more_before
        read_after |= more_after
    pre, post = [], []
    # Scalars first: array lengths may name any scalar parameter (alltoallw: the comm, last).
    for p in sorted(params, key=lambda q: q.is_array):
        pre += views[p.name][0]
        post += views[p.name][1]
    return pre, post, [views[p.name][2] for p in params]


def gen_fortran(fn, params):
    name = fn["name"]
    lower = name.lower()
    fparams = ", ".join([fortran_param(p) for p in params] + ["MPI_Fint *ierr"])
    pass_through = ", ".join([f"f_{p.name}" for p in params] + ["ierr"])
    before, after = recorder_code(fn)
    pre, post, args = fortran_plan(fn, params)
    call_args = ", ".join(args + ["ierr"])
    fsig = ", ".join([fortran_param(p) for p in params] + ["MPI_Fint *"])
    out = [
        f'extern "C" void p{lower}_({fsig});',
        f"// {name}, Fortran: template '{fn['kind']}'",
        f'extern "C" PERFSIFT_EXPORT void {lower}_({fparams}) {{',
        f"  if (!tracing(Group::{fn['group']})) {{ p{lower}_({pass_through}); return; }}",
        f"  Call call(Op::{name}, __builtin_return_address(0));",
    ]
    if "ev" in identifiers(before, after):
        out.append("  Event &ev = call.ev;")
    out += ["  " + l for l in pre]
    if before:
        out.append("  " + before)
    out.append(f"  p{lower}_({call_args});")
    out.append("  call.exit();")
    out += ["  " + l for l in post]
    if after:
        out.append(f"  if (*ierr == MPI_SUCCESS) {{ const SharedTables shared; {after} }}")
    out.append("}")
    for alias in (lower + "__", lower, name.upper()):
        out.append(f'extern "C" PERFSIFT_EXPORT void {alias}({fparams}) __attribute__((alias("{lower}_")));')
    return "\n".join(out)


HEADER = """// Generated by collect/gen_wrappers.py from collect/mpi_functions.toml. Do not edit.
"""


def main():
    spec_path, outdir = Path(sys.argv[1]), Path(sys.argv[2])
    spec = tomllib.loads(spec_path.read_text())
    fns = expand(spec)
    names = [f["name"] for f in fns] + spec["manual"]
    if len(set(names)) != len(names):
        raise SystemExit("gen_wrappers: a function is listed twice")
    outdir.mkdir(parents=True, exist_ok=True)

    ops = [HEADER, "#pragma once", "#include <cstdint>", "", "namespace perfsift::collect {", "",
           "// Function groups; the collector's `mpi.groups` key selects which are traced.",
           "enum class Group : uint8_t { " + ", ".join(GROUPS) + " };",
           f"inline constexpr int kGroupCount = {len(GROUPS)};",
           "inline constexpr const char *kGroupNames[] = {" + ", ".join(f'"{g}"' for g in GROUPS) + "};", "",
           "// Operation codes: the index into the store's /ops table.",
           "enum class Op : uint16_t {"]
    for n in names:
        ops.append(f"  {n},")
    ops += ["};", f"inline constexpr int kOpCount = {len(names)};", "",
            "// flow: how the replay synchronises a collective (mpi_functions.toml).",
            "struct OpInfo { const char *name; Group group; const char *kind; const char *flow; };",
            "inline constexpr OpInfo kOps[] = {"]
    for f in fns:
        ops.append(f'  {{"{f["name"]}", Group::{f["group"]}, "{f["kind"]}", "{f.get("flow", "all")}"}},')
    for n in spec["manual"]:
        ops.append(f'  {{"{n}", Group::env, "manual", "all"}},')
    ops += ["};", "", "}  // namespace perfsift::collect", ""]
    (outdir / "ops.h").write_text("\n".join(ops))

    prologue = [HEADER, '#include "recorder.h"', "", "using namespace perfsift::collect;",
                "using namespace perfsift::collect::bytes;", ""]
    c_out, f_out = list(prologue), list(prologue)
    for fn in fns:
        params = split_args(fn["args"])
        # Functions newer than the MPI library are left out, not failed on.
        guard = [f"#if MPI_VERSION >= {fn['since']}"] if fn.get("since", 1) > 1 else []
        end = ["#endif"] if guard else []
        c_out += guard + [gen_c(fn, params)] + end + [""]
        if fn.get("fortran", True):
            f_out += guard + [gen_fortran(fn, params)] + end + [""]
    (outdir / "wrappers_c.cpp").write_text("\n".join(c_out))
    (outdir / "wrappers_f.cpp").write_text("\n".join(f_out))


if __name__ == "__main__":
    main()
