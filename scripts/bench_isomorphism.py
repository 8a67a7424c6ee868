"""Which exact isomorphism test ``orgeval-exact`` uses, measured: its own
individualisation-refinement search (pure Python, deadline checked between branches) against
igraph's VF2 (C, vertex and edge colours, no way to stop it early) on the same typed graphs.

Pairs: every ORGEval reference whose refined colouring leaves ties, against itself and against
an equivalent perturbed copy, and against the ``coefficients_swapped`` corpus copies (truth:
different). Both methods get the union-refined colours as vertex colours, so only the search
differs. CPU seconds for the own search; VF2 runs each pair in a child process (it cannot be
stopped otherwise) and wall seconds are printed, with the pairs it did not finish. Needs the
``dev`` extra (igraph).

    python scripts/bench_isomorphism.py [--data-dir ../shared/benchmarks/t-rex]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import igraph
from lp_writer import write_lp
from structure_corpus import corpus
from structure_perturb import perturb

from trex_eval.grading.structure import exact
from trex_eval.grading.structure.keys import NumericKeys
from trex_eval.grading.structure.typed_graph import build_graph, magnitudes, typed_form
from trex_eval.lp import parse_lp
from trex_eval.records import LinearModel

_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "t-rex"


def _prepared(reference: LinearModel, generated: LinearModel) -> tuple[exact._Union, list[int]] | None:
    """The union graph and its refined colouring, when the pair needs an isomorphism test with ties."""
    forms = (typed_form(reference), typed_form(generated))
    keys = NumericKeys(magnitudes(forms))
    graphs = (build_graph(forms[0], keys), build_graph(forms[1], keys))
    split = len(graphs[0].colours)
    if split != len(graphs[1].colours):
        return None
    union = exact._Union(
        adjacency=graphs[0].adjacency + [exact._shifted(e, split) for e in graphs[1].adjacency],
        split=split,
        deadline=time.perf_counter() + 3600,
    )
    colour = exact._refine(union, exact._canonical_ids([*graphs[0].colours, *graphs[1].colours]))
    if exact._differing(union, colour) or len(set(colour[:split])) == split:
        return None
    return union, colour


def _vf2(union: exact._Union, colour: list[int]) -> bool:
    sides = []
    for nodes in (range(union.split), range(union.split, len(colour))):
        offset = nodes.start
        edges, labels = [], []
        for node in nodes:
            for other, label in union.adjacency[node]:
                if node < other:
                    edges.append((node - offset, other - offset))
                    labels.append(label)
        sides.append((igraph.Graph(len(nodes), edges), [colour[n] for n in nodes], labels))
    ids = {label: k for k, label in enumerate(sorted({x for _, _, ls in sides for x in ls}))}
    (g1, c1, l1), (g2, c2, l2) = sides
    return bool(
        g1.isomorphic_vf2(
            g2, color1=c1, color2=c2, edge_color1=[ids[x] for x in l1], edge_color2=[ids[x] for x in l2]
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=_DEFAULT_DATA)
    parser.add_argument("--vf2-limit", type=float, default=10.0)
    args = parser.parse_args()
    folder = args.data_dir / "data" / "bench4opt" / "lp_code"
    references = [parse_lp((folder / f"model_{k}_problem{k}.lp").read_text()) for k in range(394)]
    pairs = []
    for k, model in enumerate(references):
        pairs.append((model, model))
        pairs.append((model, parse_lp(write_lp(perturb(model, seed=k)))))
    swapped = [c for c in corpus(references) if c.transformation == "coefficients_swapped"]
    pairs.extend((references[c.item], c.generated) for c in swapped)
    prepared = [p for p in (_prepared(a, b) for a, b in pairs) if p is not None]
    print(f"{len(prepared)} pairs with ties after refinement (of {len(pairs)})")
    started = time.process_time()
    answers = Counter(exact._search(union, colour) for union, colour in prepared)
    print(f"own search  {time.process_time() - started:6.3f} CPU s  isomorphic: {dict(answers)}")
    # VF2 cannot be stopped from Python: each pair runs in a child process, given --vf2-limit s.
    total, stuck = 0.0, []
    context = multiprocessing.get_context("fork")
    for index, (union, colour) in enumerate(prepared):
        started = time.perf_counter()
        child = context.Process(target=_vf2, args=(union, colour))
        child.start()
        child.join(args.vf2_limit)
        if child.is_alive():
            child.kill()
            child.join()
            stuck.append(index)
        total += time.perf_counter() - started
    print(
        f"igraph VF2  {total:6.3f} wall s (children)  "
        f"did not finish within {args.vf2_limit:g} s: {len(stuck)} pairs"
    )


if __name__ == "__main__":
    main()
