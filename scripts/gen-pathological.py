#!/usr/bin/env python3
"""Generate the pathological repositories of scripts/bench.

    scripts/gen-pathological.py roles N OUT    N roles, role k inheriting roles k-1 and k-2
                                               (a chain that is also a DAG: every naive
                                               walk of it is exponential)
    scripts/gen-pathological.py orphan N OUT   the roles repository plus one object no role
                                               may read and nothing links to (doctor's
                                               orphan check must try every consumer)
    scripts/gen-pathological.py chain N OUT    one id with N+1 versions, each superseding
                                               the previous one (an N-link chain)

Standard library only. The output is fully determined by the arguments.
"""

import os
import sys


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def roles(n, out):
    lines = [
        'opencontext: "1.0"',
        "id: bench-roles",
        "collections:",
        "  policies: ./context/**",
        "roles:",
    ]
    for k in range(n):
        lines.append(f"  r{k}:")
        lines.append(f"    include: [policies.p{k % 50}]")
        parents = [f"r{k - d}" for d in (1, 2) if k - d >= 0]
        if parents:
            lines.append(f"    inherits: [{', '.join(parents)}]")
    write(os.path.join(out, "opencontext.yaml"), "\n".join(lines) + "\n")
    for k in range(50):
        write(
            os.path.join(out, "context", f"p{k}.md"),
            f"---\nid: policies.p{k}\ntype: policy\nowner: bench\n---\n\nPolicy {k}.\n",
        )


def orphan(n, out):
    roles(n, out)
    write(
        os.path.join(out, "context", "orphan.md"),
        "---\nid: policies.orphan\ntype: policy\nowner: bench\n---\n\nRead by no role.\n",
    )


def chain(n, out):
    write(
        os.path.join(out, "opencontext.yaml"),
        'opencontext: "1.0"\nid: bench-chain\ncollections:\n  chain: ./context/**\n'
        "roles:\n  reader:\n    include: [chain.*]\n",
    )
    for v in range(1, n + 2):
        sup = f"supersedes: [chain.doc@{v - 1}]\n" if v > 1 else ""
        write(
            # `doc.v<N>.yaml`: the path gives the declared id (a version suffix is the
            # id's own), so the chain is a clean repository and validate measures the
            # chain, not 100,001 id-mismatch warnings.
            os.path.join(out, "context", f"doc.v{v}.yaml"),
            f"id: chain.doc\ntype: note\nowner: bench\nversion: {v}\n{sup}content: version {v}\n",
        )


def main():
    kinds = {"roles": roles, "orphan": orphan, "chain": chain}
    if len(sys.argv) != 4 or sys.argv[1] not in kinds:
        sys.exit(__doc__)
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    kinds[kind](n, out)


if __name__ == "__main__":
    main()
