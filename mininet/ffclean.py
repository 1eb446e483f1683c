#!/usr/bin/python3
"""Removes what an interrupted harness run left behind — ours only.

Bridges named s<G>x<S> / t<L>x<S>, interfaces <node>-eth<N> and the host shells whose pids a
crashed run recorded in /tmp/fabricflow-mininet/*.pids (killed by pid, after checking they are
still Mininet shells or the run's fabricflow-controller/-agent).  Other parts of fabricflow share
this ovs-vswitchd, so unlike `mn -c` this never deletes other bridges or kills by name.
`--check` only reports and fails if anything is left.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fflaunch import STATE_DIR, our_bridges, our_links, sweep  # noqa: E402


def recorded_pids():
    pids = []
    if not STATE_DIR.exists():
        return pids
    for f in STATE_DIR.glob("*.pids"):
        owner = int(f.stem)
        if Path(f"/proc/{owner}").exists():
            continue  # that run is still alive: not ours to clean
        for pid in json.loads(f.read_text() or "[]"):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            # Mininet host shells, and the controller/agent a controller-mode run started, and
            # the etcd members of a chaos run (data directory in the run's ffmn- directory).
            if b"mininet:" in cmd or b"fabricflow-controller\0run" in cmd \
                    or b"fabricflow-agent\0run" in cmd \
                    or (cmd.startswith(b"etcd\0") and b"/ffmn-" in cmd):
                pids.append(pid)
        f.unlink()
    return pids


def main():
    if "--check" in sys.argv:
        brs, links = our_bridges(), our_links()
        if brs or links:
            print(f"ffclean: left behind: bridges {brs}, interfaces {links}")
            return 1
        print("ffclean: no bridge or interface of ours left")
        return 0
    pids = recorded_pids()
    before = (our_bridges(), our_links())
    brs, links = sweep(pids)
    print(f"ffclean: killed {len(pids)} host shells, removed {len(before[0])} bridges and "
          f"{len(before[1])} interfaces; left: {brs} {links}")
    return 1 if brs or links else 0


if __name__ == "__main__":
    sys.exit(main())
