#!/usr/bin/python3
"""On-node and off-node pairs keep their own network parameters: two_nodes_test.py PERFSIFT APP WORK_DIR

Collects tests/apps/ring (APP) on 4 ranks placed on two "nodes" of this machine: ranks 0-1
name their node `nodea`, ranks 2-3 `nodeb` (the collector's node.name setting,
PERFSIFT_NODE_NAME, given per application context of mpirun). Known answer: of the ring's
4 x ROUNDS messages, those 0->1 and 2->3 are on-node and those 1->2 and 3->0 off-node,
2 x ROUNDS each; the analysis keeps two parameter sets, each with its own origins and
sample counts, and says so in the report's Network line. The same ring collected without
node names (one host) keeps one level of on-node pairs.

Then the collector's measurement: a ring of 2 rounds on 2 ranks (4 messages, too few for any
parameter) takes o_s, o_r, g, G and L from it, not the defaults, and says what it cost;
with the measurement turned off (PERFSIFT_NETWORK_PROBE=0) the same run keeps the defaults.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import harness  # noqa: E402

ROUNDS, BYTES = 2000, 8
PARAMETERS = ("o_s", "o_r", "g", "G", "L")
ORIGINS = ("this run", "the collector's measurement", "defaults")


def collect_and_analyze(perfsift, work, name, launch, env=None):
    store, results, report = work / f"{name}.h5", work / f"{name}.r.h5", work / f"{name}.json"
    perfsift("collect", "-o", store, "--", "mpirun", *launch, out=work / f"{name}.collect.txt", err=harness.STDOUT,
             env=env, what=f"{name}: collection failed")
    done = perfsift.analyze(store, results, "--json", report, ranks=1, out=harness.CAPTURE, err=harness.CAPTURE,
                            what=f"{name}: analyze failed")
    network = json.loads(report.read_text())["whatif"][0]["loggps"]
    line = next((x for x in done.stdout.splitlines() if x.strip().startswith("Network:")), "")
    print(f"{name}: {line.strip()}")
    return network, line


def check_two_levels(network, line, errors):
    half = 2 * ROUNDS
    if network.get("levels") != 2 or network.get("pairs") != "on-node pairs":
        errors.append(f"two nodes: levels {network.get('levels')}, pairs {network.get('pairs')!r}; expected 2 levels")
        return
    counts = (network.get("on_node_pair_messages"), network.get("off_node_pair_messages"))
    if counts != (half, half):
        errors.append(f"two nodes: on-node and off-node messages {counts}, expected {half} each")
    for p in PARAMETERS:
        for prefix in ("", "off_node_"):
            if network.get(f"{prefix}origin_{p}") not in ORIGINS or f"{prefix}messages_{p}" not in network:
                errors.append(f"two nodes: {prefix}{p} without its origin or samples: {network}")
        value = network.get(f"off_node_{p}_ns" if p != "G" else "off_node_G_ns_per_byte")
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            errors.append(f"two nodes: no off-node value of {p}: {network}")
    # Each level rests on its own messages: both send overheads from this run's 8-byte sends.
    for prefix in ("", "off_node_"):
        if network.get(f"{prefix}origin_o_s") != "this run" or network.get(f"{prefix}messages_o_s", 0) < 30:
            errors.append(f"two nodes: {prefix}o_s not from this run's sends: {network}")
    if "on-node pairs: o_s" not in line or "off-node pairs: o_s" not in line:
        errors.append(f"two nodes: the report's Network line does not give both levels: {line!r}")


def main(perfsift_binary, app, work):
    work = harness.work_dir(work)
    perfsift = harness.Perfsift(perfsift_binary)
    errors = []
    placed = []
    for node in ("nodea", "nodeb"):
        placed += [":"] if placed else []
        placed += ["-n", "2", "-x", f"PERFSIFT_NODE_NAME={node}", app, str(ROUNDS), str(BYTES)]
    network, line = collect_and_analyze(perfsift, work, "two_nodes", placed)
    check_two_levels(network, line, errors)
    network, line = collect_and_analyze(perfsift, work, "one_node", ["-n", "4", app, str(ROUNDS), str(BYTES)])
    if network.get("levels") != 1 or network.get("pairs") != "on-node pairs" or "off_node_origin_o_s" in network:
        errors.append(f"one node: expected one level of on-node pairs: {network}")
    if "off-node" in line:
        errors.append(f"one node: the Network line names off-node pairs: {line!r}")
    check_measurement(perfsift, work, app, errors)
    return harness.verdict(errors)


def check_measurement(perfsift, work, app, errors):
    few = ["-n", "2", app, "2", str(BYTES)]
    network, _ = collect_and_analyze(perfsift, work, "few", few)
    cost = network.get("probe_cost_ns")
    print(f"few: the collector's measurement took {cost / 1e6 if cost else float('nan'):.3f} ms")
    for p in PARAMETERS:
        if network.get(f"origin_{p}") != "the collector's measurement" or network.get(f"messages_{p}", 0) < 10:
            errors.append(f"few messages: {p} not from the collector's measurement: {network}")
    if not isinstance(cost, (int, float)) or not cost > 0:
        errors.append(f"few messages: the measurement's cost is not stated: {network}")
    network, _ = collect_and_analyze(perfsift, work, "few_unmeasured", few, env={"PERFSIFT_NETWORK_PROBE": "0"})
    for p in PARAMETERS:
        if network.get(f"origin_{p}") != "defaults":
            errors.append(f"measurement off: {p} not the default: {network}")


if __name__ == "__main__":
    harness.run_script(main, 3, __doc__)
