#!/usr/bin/env python3
"""Cut a small real graph out of Cora for the property tests.

The induced subgraph on the first N nodes reached by a breadth-first search
from the highest-degree node (ties: lowest id), nodes relabelled in BFS
order; the feature rows of the same nodes in the same order.  Usage:
    python3 scripts/subgraph.py data/cora_adj.mtx data/cora_features.mtx 500 data/cora500
writes data/cora500_adj.mtx and data/cora500_features.mtx.
"""
import collections
import sys


def read_mtx(path):
    with open(path) as f:
        header = f.readline()
        line = f.readline()
        while line.startswith('%'):
            line = f.readline()
        rows, cols, _ = map(int, line.split())
        entries = [l.split() for l in f if l.strip() and not l.startswith('%')]
    return header, rows, cols, entries


def main(adj_path, feat_path, n, out):
    header, rows, _, entries = read_mtx(adj_path)
    nbrs = collections.defaultdict(list)
    for e in entries:
        r, c = int(e[0]), int(e[1])
        nbrs[r].append(c)
    start = min(nbrs, key=lambda v: (-len(nbrs[v]), v))
    order, seen, queue = [], {start}, collections.deque([start])
    while queue and len(order) < n:
        v = queue.popleft()
        order.append(v)
        for w in sorted(nbrs[v]):
            if w not in seen:
                seen.add(w)
                queue.append(w)
    new = {v: i + 1 for i, v in enumerate(order)}
    sub = [(new[int(e[0])], new[int(e[1])], e[2:]) for e in entries if int(e[0]) in new and int(e[1]) in new]
    sub.sort()
    with open(out + '_adj.mtx', 'w') as f:
        f.write(header)
        f.write('%% induced subgraph of %s on %d nodes, BFS order from node %d (scripts/subgraph.py)\n'
                % (adj_path, len(order), start))
        f.write('%d %d %d\n' % (len(order), len(order), len(sub)))
        for r, c, rest in sub:
            f.write(' '.join([str(r), str(c)] + rest) + '\n')
    fh, _, fcols, fentries = read_mtx(feat_path)
    fsub = sorted((new[int(e[0])], int(e[1]), e[2:]) for e in fentries if int(e[0]) in new)
    with open(out + '_features.mtx', 'w') as f:
        f.write(fh)
        f.write('%% rows of %s for the nodes of %s_adj.mtx, same order (scripts/subgraph.py)\n' % (feat_path, out))
        f.write('%d %d %d\n' % (len(order), fcols, len(fsub)))
        for r, c, rest in fsub:
            f.write(' '.join([str(r), str(c)] + rest) + '\n')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
