"""Build the labelled HTML evaluation set from the HTML shipped in Debian documentation packages.

Each page comes from one documentation generator (Sphinx, mdBook, rustdoc, Publican, DocBook,
gtk-doc, BoostBook, Doxygen, javadoc, AsciiDoc). ``--generators unseen`` builds a second set from
generators that are none of those ten and whose pages were never looked at while the extraction
rules were written (makeinfo, texi2html, groff, Apache's manual, MkDocs, Haddock, Erlang's
erl_docgen): every generator of it is held out, and its truth selectors were written from the
markup of one or two pages each, not from any extractor's output (symbolic links and redirect
stubs are skipped in it, see ``SETS``). The truth of "main content" is that generator's own
main-content markup: a CSS selector for the main element(s) and one for the furniture inside
them to drop, recorded per page in ``labels.jsonl``. Those selectors are the truth only: the
extractors under test never see them. The whole view is the text of ``<body>``.

Both views are turned into text by the same small block-aware walk (lxml, scripts/styles/hidden
dropped, block elements separate words), then into neardup's 5-word shingle ids
(:func:`neardup.shingle.shingle_ids`, default normalisation), and every pair's exact Jaccard is
computed on both views. Pairs with J >= 0.3 on either view are written to ``pairs.tsv``; every
other pair is below 0.3 on both.

Output (``benchmarks/data/html_set/``, or ``html_set_unseen/`` for the second set; git-ignored)::

    pages/<generator>/<n>.html   the page, bytes as shipped
    labels.jsonl                 id, generator, package path, truth selectors, sizes, held_out
    pairs.tsv                    a, b, j_main, j_whole
    manifest.json                counts, package versions, the sampling seed

``--sample DIR`` also writes a small subset (a few pages per generator, with their pairs) to
``tests/data/html/debian/`` for the unit tests.

Usage::

    apt-get install python3-doc rust-doc debian-handbook libboost1.81-doc libstdc++-12-doc \\
        libglib2.0-doc openjdk-17-doc git-doc cmake-doc postgresql-doc-15 debian-reference-en
    python benchmarks/build_html_set.py [--per-generator 150] [--sample tests/data/html/debian]

    apt-get install octave-doc gettext-doc apache2-doc mkdocs-doc python-djangorestframework-doc \
        erlang-doc libghc-aeson-doc libghc-attoparsec-doc libghc-scientific-doc \
        libghc-unordered-containers-doc libghc-vector-doc
    python benchmarks/build_html_set.py --generators unseen
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

DOC = "/usr/share/doc"
SEED = "neardup-html-set-1"
#: Generators kept out of rule development: the extractor's rules were written without looking at
#: their pages (only their truth selectors were written, from the outline of one page each), and
#: the benchmark reports them on their own. These two because, with rustdoc and javadoc, they hold
#: the set's near-duplicates and boilerplate traps.
HELD_OUT = ("mdbook", "publican")

# generator -> (packages, globs under /usr/share/doc, truth: main selector, furniture to drop)
GENERATORS = {
    "sphinx": (["python3.11-doc", "cmake-doc"],
               ["python3.11-doc/html/**/*.html", "cmake-doc/html/**/*.html"],
               "div.body", "a.headerlink"),
    "mdbook": (["rust-doc"],
               ["rust-doc/html/book/**/*.html", "rust-doc/html/nomicon/**/*.html",
                "rust-doc/html/rustdoc/**/*.html", "rust-doc/html/edition-guide/**/*.html",
                "rust-doc/html/embedded-book/**/*.html", "rust-doc/html/unstable-book/**/*.html"],
               "#content main", ""),
    "rustdoc": (["rust-doc"],
                ["rust-doc/html/std/**/*.html", "rust-doc/html/core/**/*.html", "rust-doc/html/alloc/**/*.html"],
                "#main-content", ""),
    "publican": (["debian-handbook"], ["debian-handbook/html/*/*.html"],
                 "body", "#banner, #title, ul.docnav"),
    "docbook": (["postgresql-doc-15", "libstdc++-12-doc", "valgrind"],
                ["postgresql-doc-15/html/*.html", "libstdc++-12-doc/libstdc++/manual/*.html",
                 "valgrind/html/*.html"],
                "body", ".navheader, .navfooter, body > div > table.nav"),
    "gtkdoc": (["libglib2.0-doc"], ["libglib2.0-doc/*/*.html"],
               "body", "table.navigation, div.footer"),
    "boostbook": (["libboost1.81-doc"], ["libboost1.81-doc/doc/html/**/*.html"],
                  "body", "body > table, body > hr, div.spirit-nav"),
    "doxygen": (["libstdc++-12-doc"], ["libstdc++-12-doc/libstdc++/user/*.html"],
                "#doc-content div.header, #doc-content div.contents", ""),
    "javadoc": (["openjdk-17-doc"], ["openjdk-17-doc/api/java.base/**/*.html",
                                    "openjdk-17-doc/api/java.desktop/**/*.html"],
                "main", ""),
    "asciidoc": (["git-doc"], ["git-doc/*.html", "git-doc/**/*.html"],
                 "#header, #content", ""),
}

# The second set, from generators that the extraction rules never saw. Truth from each generator's
# own markup, read on one or two pages: the element it puts the document in, less its navigation.
UNSEEN_GENERATORS = {
    # Texinfo's makeinfo, one node a page: the node's "Next/Up" bar, its menu of sub-nodes and the
    # pilcrow anchors of definitions.
    "makeinfo": (["octave-doc"], ["octave/octave.html/*.html", "octave/liboctave.html/*.html"],
                 "body", "div.header, ul.section-toc, a.copiable-anchor"),
    # texi2html, one chapter a page: the button bars above and below it and the "generated by" line.
    "texi2html": (["gettext-doc"], ["gettext/gettext_*.html"],
                  "body", "body > table[cellpadding], body > p:last-child"),
    # groff -Thtml man pages: the list of links to the page's own sections above the first rule.
    "groff": (["gettext-doc"], ["gettext/*.[0-9].html"],
              "body", 'body > a[href^="#"]'),
    # Apache httpd's XSLT manual, 12 languages: the page content less its language bars, "top"
    # links, translation notices, the quick-view box of links and the pilcrow anchors.
    "apachedoc": (["apache2-doc"], ["apache2-doc/manual/**/*.html"],
                  "#page-content", "div.toplang, div.top, div.outofdate, #quickview, a.permalink"),
    # MkDocs, its own theme and a project theme: the main column, less the heading anchors.
    "mkdocs": (["mkdocs-doc", "python-djangorestframework-doc"],
               ["mkdocs/html/**/*.html", "python3-djangorestframework/html/**/*.html"],
               'div[role="main"], #main-content', "a.headerlink"),
    # Haddock module pages: the content less its contents box, the synopsis (a second listing of
    # the interface) and the per-declaration "Source" and "#" links.
    "haddock": (["libghc-aeson-doc", "libghc-attoparsec-doc", "libghc-scientific-doc",
                 "libghc-unordered-containers-doc", "libghc-vector-doc"],
                ["libghc-*-doc/html/*.html"],
                "#content", "#table-of-contents, #synopsis, a.link, a.selflink"),
    # Erlang/OTP's erl_docgen: the content column less its copyright footer (the left column of
    # the application's pages is outside it).
    "erldocgen": (["erlang-doc"], ["erlang-doc/lib/*/doc/html/*.html"],
                  "#content", "div.footer"),
}

#: The two sets: generator table, held-out generators, output folder name, and whether aliases are
#: skipped: pages that are symbolic links (Apache's manual links every untranslated page of a
#: language to the English file: the same bytes under a second name, an exact copy rather than a
#: near-duplicate) and redirect stubs with a meta refresh (2,356 of octave-doc's 2,891 pages are
#: stubs of one sentence that send an index entry on to its node; they would be most of the sample).
SETS = {
    "seen": (GENERATORS, HELD_OUT, "html_set", False),
    "unseen": (UNSEEN_GENERATORS, tuple(UNSEEN_GENERATORS), "html_set_unseen", True),
}

_DROP = {"script", "style", "noscript", "template", "head", "title", "svg", "iframe", "object", "embed", "canvas"}
_BLOCK = set("""address article aside blockquote body br caption center dd details dialog dir div dl dt fieldset
    figcaption figure footer form frameset h1 h2 h3 h4 h5 h6 header hgroup hr html legend li listing main
    menu nav ol option p plaintext pre section summary table tbody tfoot thead tr ul xmp td th""".split())


def _text(el, drop: set) -> str:
    """Block-aware text of an lxml element, without the dropped subtrees."""
    out: list[str] = []

    def walk(e):
        tag = e.tag if isinstance(e.tag, str) else None
        if tag is None:
            if e.tail:
                out.append(e.tail)
            return
        tag = tag.lower()
        if tag in _DROP or e.get("hidden") is not None or e in drop:
            if e.tail:
                out.append(e.tail)
            return
        block = tag in _BLOCK
        if block:
            out.append("\n")
        if e.text:
            out.append(e.text)
        for c in e:
            walk(c)
        if block:
            out.append("\n")
        if e.tail:
            out.append(e.tail)

    tail, el.tail = el.tail, None
    walk(el)
    el.tail = tail
    return "\n".join(" ".join(line.split()) for line in "".join(out).split("\n") if line.strip())


def truth_views(data: bytes, select: str, drop: str) -> tuple[str, str, int]:
    """(main text, whole body text, number of main elements) of one page."""
    import lxml.html
    from lxml.cssselect import CSSSelector

    root = lxml.html.document_fromstring(data)
    body = root.find("body")
    if body is None:
        body = root
    whole = _text(body, set())
    mains = CSSSelector(select)(root)
    # Keep outermost matches only, so that nested matches do not count their text twice.
    mains = [m for m in mains if not any(a in mains for a in m.iterancestors())]
    dropped = set(CSSSelector(drop)(root)) if drop else set()
    main = "\n".join(_text(m, dropped) for m in mains)
    return main, whole, len(mains)


def _version(pkg: str) -> str:
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True,
                              check=False).stdout.strip()
    except OSError:
        return ""


def _rank(path: str) -> str:
    return hashlib.sha1(f"{SEED}:{path}".encode()).hexdigest()


_REFRESH = re.compile(rb"<meta[^>]+http-equiv\s*=\s*[\"']?refresh", re.IGNORECASE)


def is_alias(path: str) -> bool:
    """A symbolic link, or a redirect stub (a meta refresh in the page's first 4 KB)."""
    if os.path.islink(path):
        return True
    with open(path, "rb") as f:
        return _REFRESH.search(f.read(4096)) is not None


def candidates(patterns: list[str], skip_aliases: bool = False) -> list[str]:
    files: set[str] = set()
    for pattern in patterns:
        for p in glob.glob(os.path.join(DOC, pattern), recursive=True):
            if os.path.isfile(p) and os.path.getsize(p) <= 2_000_000 and not (skip_aliases and is_alias(p)):
                files.add(os.path.relpath(p, DOC))
    return sorted(files)


def sample(gen: str, n: int, patterns: list[str], skip_aliases: bool = False) -> list[str]:
    """A deterministic sample; rustdoc also takes std pages' core/alloc twins (re-exports), which
    are the set's natural main-content near-duplicates."""
    files = candidates(patterns, skip_aliases)
    ranked = sorted(files, key=_rank)
    if gen != "rustdoc":
        return sorted(ranked[:n])
    have = set(files)
    picked: list[str] = []
    # A third of the sample is std pages with their core/alloc twin (redirect stubs excluded).
    for p in ranked:
        if len(picked) >= n // 3:
            break
        if "/std/" not in p or os.path.getsize(os.path.join(DOC, p)) < 4096:
            continue
        for other in ("/core/", "/alloc/"):
            twin = p.replace("/std/", other, 1)
            if twin in have and os.path.getsize(os.path.join(DOC, twin)) >= 4096:
                picked += [p, twin]
                break
    chosen = set(picked)
    picked += [p for p in ranked if p not in chosen][: n - len(picked)]
    return sorted(picked[:n])


def all_pairs(ids_list: list[np.ndarray]) -> np.ndarray:
    """Exact Jaccard of every pair, as a dense matrix, from sparse intersection counts."""
    import scipy.sparse as sp

    allids = np.unique(np.concatenate([a for a in ids_list if a.size] or [np.zeros(0, np.uint64)]))
    rows, cols = [], []
    for i, a in enumerate(ids_list):
        cols.append(np.searchsorted(allids, a))
        rows.append(np.full(a.size, i))
    m = sp.csr_matrix((np.ones(sum(a.size for a in ids_list), np.int32),
                       (np.concatenate(rows), np.concatenate(cols))), shape=(len(ids_list), allids.size))
    inter = (m @ m.T).toarray().astype(np.float64)
    sizes = np.array([a.size for a in ids_list], dtype=np.float64)
    union = sizes[:, None] + sizes[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        j = np.where(union > 0, inter / union, 1.0)
    return j


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--generators", choices=sorted(SETS), default="seen",
                    help="the ten generators the rules were written on, or the unseen ones (all held out)")
    ap.add_argument("--out", help="output folder (default benchmarks/data/html_set or html_set_unseen)")
    ap.add_argument("--per-generator", type=int, default=150)
    ap.add_argument("--sample", help="also write a small subset for the tests to this folder")
    ap.add_argument("--sample-per-generator", type=int, default=4)
    args = ap.parse_args(argv)

    from neardup.exact.similarity import jaccard_sorted
    from neardup.params import ShingleParams
    from neardup.shingle import shingle_ids

    sp5 = ShingleParams(k=5)
    generators, held_out, folder, skip_aliases = SETS[args.generators]
    out = Path(args.out or Path(__file__).parent / "data" / folder)
    if out.exists():
        shutil.rmtree(out)
    (out / "pages").mkdir(parents=True)
    labels = []
    mains, wholes = [], []
    for gen, (pkgs, patterns, select, drop) in generators.items():
        paths = sample(gen, args.per_generator, patterns, skip_aliases)
        if not paths:
            print(f"build_html_set: no pages for {gen}: install {' '.join(pkgs)}", file=sys.stderr)
            continue
        (out / "pages" / gen).mkdir()
        kept = 0
        for src in paths:
            data = Path(DOC, src).read_bytes()
            main_text, whole_text, n_main = truth_views(data, select, drop)
            if n_main == 0 or not main_text.strip():
                continue  # a redirect stub or a frame set: no main content to be right about
            pid = f"{gen}/{kept:04d}"
            (out / "pages" / f"{pid}.html").write_bytes(data)
            labels.append({"id": pid, "generator": gen, "source": src, "truth_select": select,
                           "truth_drop": drop, "held_out": gen in held_out, "bytes": len(data),
                           "main_chars": len(main_text), "whole_chars": len(whole_text)})
            mains.append(shingle_ids(main_text, sp5))
            wholes.append(shingle_ids(whole_text, sp5))
            kept += 1
        print(f"build_html_set: {gen}: {kept} pages", file=sys.stderr)
    jm, jw = all_pairs(mains), all_pairs(wholes)
    # The sparse product is checked against neardup's exact function on a fixed spread of pairs.
    n = len(labels)
    for i in range(0, n, max(1, n // 40)):
        k = (i * 7 + 3) % n
        if k != i and (abs(jaccard_sorted(mains[i], mains[k])[0] - jm[i, k]) > 1e-9
                       or abs(jaccard_sorted(wholes[i], wholes[k])[0] - jw[i, k]) > 1e-9):
            raise RuntimeError(f"all-pairs Jaccard disagrees with jaccard_sorted on pages {i} and {k}")
    with open(out / "labels.jsonl", "w") as f:
        for rec in labels:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
    iu, ju = np.triu_indices(n, 1)
    keep = (jm[iu, ju] >= 0.3) | (jw[iu, ju] >= 0.3)
    with open(out / "pairs.tsv", "w") as f:
        f.write("a\tb\tj_main\tj_whole\n")
        for i, k in zip(iu[keep], ju[keep]):
            f.write(f"{labels[i]['id']}\t{labels[k]['id']}\t{jm[i, k]:.6f}\t{jw[i, k]:.6f}\n")
    pkgs = sorted({p for g in generators.values() for p in g[0]})
    manifest = {"seed": SEED, "set": args.generators, "pages": n, "bytes": sum(r["bytes"] for r in labels),
                "per_generator": {g: sum(r["generator"] == g for r in labels) for g in generators},
                "candidates": {g: len(candidates(v[1], skip_aliases)) for g, v in generators.items()},
                "aliases_skipped": skip_aliases,
                "held_out": list(held_out), "packages": {p: _version(p) for p in pkgs},
                "pairs_main_085": int((jm[iu, ju] >= 0.85).sum()),
                "traps": int(((jw[iu, ju] >= 0.8) & (jm[iu, ju] < 0.5)).sum())}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(json.dumps(manifest, sort_keys=True), file=sys.stderr)

    if args.sample:
        write_sample(out, Path(args.sample), labels, jm, jw, args.sample_per_generator, list(generators))
    return 0


def write_sample(out: Path, dest: Path, labels, jm, jw, per_gen: int, generators: list[str]) -> None:
    """A few pages per generator, chosen so that the sample holds near-duplicate pairs and traps
    (the first page of each generator that has a partner, with the partner), then small pages."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    chosen: list[int] = []
    for gen in generators:
        mine = [i for i, r in enumerate(labels) if r["generator"] == gen and r["bytes"] <= 60_000]
        picked: list[int] = []
        for i in mine:
            if len(picked) >= per_gen:
                break
            partners = [k for k in mine if k != i and (jm[i, k] >= 0.85 or (jw[i, k] >= 0.8 and jm[i, k] < 0.5))]
            if partners and i not in picked:
                picked += [i, partners[0]] if partners[0] not in picked else [i]
        for i in mine:
            if len(picked) >= per_gen:
                break
            if i not in picked:
                picked.append(i)
        chosen += picked[:per_gen + 1]
    recs = []
    for i in chosen:
        r = dict(labels[i])
        name = r["id"].replace("/", "-") + ".html"
        shutil.copyfile(out / "pages" / f"{r['id']}.html", dest / name)
        r["file"] = name
        recs.append(r)
    with open(dest / "labels.jsonl", "w") as f:
        for r in recs:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    with open(dest / "pairs.tsv", "w") as f:
        f.write("a\tb\tj_main\tj_whole\n")
        for x in range(len(chosen)):
            for y in range(x + 1, len(chosen)):
                i, k = chosen[x], chosen[y]
                f.write(f"{labels[i]['id']}\t{labels[k]['id']}\t{jm[i, k]:.6f}\t{jw[i, k]:.6f}\n")


if __name__ == "__main__":
    sys.exit(main())
