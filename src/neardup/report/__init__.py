"""``neardup report``: measure a whole site and show it as ``report.json`` and a self-contained ``report.html``.

>>> from neardup.report import ReportConfig, build_report          # doctest: +SKIP
>>> doc = build_report("site/", "out/", ReportConfig())             # doctest: +SKIP
>>> doc["whole_page"]["mean"], doc["main_content"]["mean"]          # doctest: +SKIP

Needs the ``report`` extra (matplotlib) for the figures and the ``io`` extra (lxml, warcio,
trafilatura) to read HTML and WARC input.
"""

from __future__ import annotations

import os
import time

from .metrics import InputOptions, ReportConfig, load_site, measure_site
from .worked_examples import seed_examples

__all__ = ["InputOptions", "ReportConfig", "build_report", "load_site", "measure_site", "seed_examples"]


def build_report(site: str | None, out_dir: str, cfg: ReportConfig = ReportConfig(), *,
                 inputs: InputOptions = InputOptions(), jobs: int = 1, with_seed_examples: bool = False,
                 log=None) -> dict:
    """Measure ``site`` (and/or the seed's examples), draw the figures, write the report; returns report.json."""
    from . import plots
    from .metrics import banding_curves
    from .render import write_report

    plots._matplotlib()  # fail early, before the long part, when the extra is missing
    say = log or (lambda msg: None)
    started = time.perf_counter()
    fig_dir = os.path.join(out_dir, "figures")
    metrics, site_figs, seed, seed_figs = None, [], None, []
    if site is not None:
        pages, skipped, info = load_site(site, inputs, jobs=jobs)
        say(f"read {len(pages)} pages from {site} ({len(skipped)} without text) in {time.perf_counter() - started:.1f} s")
        metrics = measure_site(pages, cfg, site=site, skipped=skipped, info=info)
        say(f"measured {metrics['sampled_pairs']} pairs in {time.perf_counter() - started:.1f} s")
        site_figs = plots.site_figures(metrics, fig_dir)
        config = metrics["config"]
    else:
        used = banding_curves(cfg.num_perm, cfg.threshold)["configs"][-1]
        config = {"site": None, **cfg.as_dict(),
                  "banding": {"bands": used["bands"], "rows": used["rows"], "threshold": used["threshold"]}}
    if with_seed_examples:
        seed = seed_examples(cfg)
        seed_figs = plots.seed_figures(seed, fig_dir)
        config = {**config, "seed_examples": True}
    doc = write_report(out_dir, metrics, site_figs, seed, seed_figs, config)
    say(f"wrote {os.path.join(out_dir, 'report.html')} in {time.perf_counter() - started:.1f} s")
    return doc
