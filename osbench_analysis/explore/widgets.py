"""Pick campaigns, probe, placement and environments from lists and see the
per-run plot, the verdict on the runs and the comparison update (JupyterLab).

The widget only wires lists to the functions of :mod:`explore`; the same
answers come from calling those with plain parameters (what papermill runs).
``table_filter(table)`` shows any table (the estimate table of analyze.ipynb)
with a list per probe, environment and host it has, to keep only their rows.
ipywidgets is imported here, not at package import, so scripts never need it.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from osbench_analysis import formatting
from osbench_analysis.explore import questions as explore
from osbench_analysis.store import campaigns as store


def _newest_per_environment(cat: pd.DataFrame, root: str | Path | None = None) -> list[str]:
    """The campaigns analyze() would pick (analysis.select_campaigns: on the host of the newest complete round,
    the newest complete campaign of each environment, a campaign measured for the sweeps alone only where
    nothing else is), among ``cat``'s."""
    from osbench_analysis.analysis import pipeline as analysis

    return [r.campaign_id for r in analysis.select_campaigns(root=root) if r.campaign_id in set(cat["campaign_id"])]


def show_in(output, *items) -> None:
    """Replace what an ipywidgets ``Output`` shows by ``items`` (a str prints as text; anything else shows as
    IPython would display it), set as the widget's state in one assignment.

    Not ``with output: display(...)``: capturing into an Output makes a notebook runner (nbclient, under
    papermill) send the captured outputs back to the kernel on the shell socket while it waits on that socket
    for the cell's reply; now and then the reply is then never seen and the run waits for ever (nbclient
    issue 312; `make paper` stopped so in the estimate table's filter).  Set as state, the outputs reach the
    runner and JupyterLab alike, and the runner sends nothing back."""
    from IPython.core.formatters import format_display_data

    outputs = []
    for item in items:
        if isinstance(item, str):
            outputs.append({"output_type": "stream", "name": "stdout", "text": item + "\n"})
        else:
            data, metadata = format_display_data(item)
            outputs.append({"output_type": "display_data", "data": data, "metadata": metadata})
    output.outputs = tuple(outputs)


class Explorer:
    """The widget and its state: ``Explorer(root).widget`` is what a cell shows."""

    def __init__(self, root: str | Path | None = None, *, probe: str = "pipe_pingpong",
                 placement: str | None = None, baseline: str = "native", environments: list[str] | None = None):
        import ipywidgets as w

        self.root = root
        self.catalog = explore.campaigns(root)
        if self.catalog.empty:
            raise store.StoreError(f"no campaigns under {root or store.default_root()}: run `osbench run` first")
        ids = list(self.catalog["campaign_id"])
        # every label in full ("environments" was cut to "environm..." at the default width), the same
        # width for all, so the lists and dropdowns line up
        label = dict(style={"description_width": "7.5em"})
        # each campaign named with the host that measured it (hosts.identity's label)
        options = [(f"{c} · {h}", c) for c, h in zip(ids, self.catalog["host_label"])]
        self.campaigns = w.SelectMultiple(options=options, value=_newest_per_environment(self.catalog, root),
                                          description="campaigns", rows=8, layout=w.Layout(width="48%"), **label)
        self.probe = w.Dropdown(description="probe", **label)
        self.placement = w.Dropdown(description="placement", **label)
        self.environments = w.SelectMultiple(description="environments", rows=8, layout=w.Layout(width="40%"),
                                             **label)
        self.compare_by = w.Dropdown(options=["environment", "campaign_id", "placement"], value="environment",
                                     description="compare by", **label)
        self.baseline = w.Dropdown(description="baseline", **label)
        self.output = w.Output()
        self._want = dict(probe=probe, placement=placement, baseline=baseline, environments=environments)
        self._samples = pd.DataFrame()
        self._busy = False
        self.campaigns.observe(self._campaigns_changed, "value")
        for c in (self.probe, self.placement, self.environments, self.compare_by, self.baseline):
            c.observe(lambda _: self.refresh(), "value")
        self.widget = w.VBox([w.HBox([self.campaigns, self.environments]),
                              w.HBox([self.probe, self.placement]), w.HBox([self.compare_by, self.baseline]),
                              self.output])
        self._campaigns_changed(None)

    def _campaigns_changed(self, _) -> None:
        """New campaigns: the probes, placements and environments they hold become the choices."""
        if not self.campaigns.value:
            show_in(self.output, "pick at least one campaign")
            return
        _, s = store.load_campaigns(list(self.campaigns.value), self.root,
                                    columns=["campaign_id", "environment", "probe", "placement"])
        self._holding = s.drop_duplicates()
        self._busy = True    # changing the lists fires their observers: draw once, at the end
        try:
            self._set(self.probe, sorted(self._holding["probe"].unique()), self._want["probe"])
            self._set(self.environments, sorted(self._holding["environment"].unique()), self._want["environments"],
                      many=True)
        finally:
            self._busy = False
        self.refresh()

    @staticmethod
    def _set(control, options, wanted, many=False) -> None:
        keep = control.value
        control.options = options
        if many:
            control.value = tuple(v for v in (keep or wanted or options) if v in options) or tuple(options)
        else:
            control.value = keep if keep in options else (wanted if wanted in options else options[0])

    @staticmethod
    def _keep_choice(control, options, wanted) -> None:
        """New ``options`` for a dropdown, its chosen value kept while it is still among them (ipywidgets
        selects the first option whenever the options change: the baseline became whatever sorted first),
        else ``wanted``, else the first."""
        keep = control.value
        if list(control.options) != list(options):
            control.options = options
        if options:
            control.value = keep if keep in options else (wanted if wanted in options else options[0])

    def _choices_for_probe(self) -> None:
        h = self._holding[self._holding["probe"] == self.probe.value]
        placements = sorted(h["placement"].unique())
        self._keep_choice(self.placement, placements, self._want["placement"])
        values = {"environment": sorted(set(h["environment"]) & set(self.environments.value)),
                  "campaign_id": list(dict.fromkeys(h["campaign_id"])),
                  "placement": placements}[self.compare_by.value]
        self._keep_choice(self.baseline, values, self._want["baseline"])

    def refresh(self) -> None:
        """Recompute and redraw for the current choices (errors are shown, never raised)."""
        from IPython.display import display

        if self._busy or not self.probe.value or not self.environments.value:
            return
        self._busy = True
        try:
            self._choices_for_probe()
        finally:
            self._busy = False
        placement = None if self.compare_by.value == "placement" else self.placement.value
        h = self._holding[(self._holding["probe"] == self.probe.value)
                          & ((self._holding["placement"] == placement) if placement else True)]
        # the chosen environments that measured this probe here (a sandbox may lack a placement)
        envs = [e for e in self.environments.value if e in set(h["environment"])]
        shown = []
        try:
            if not envs:
                raise explore.ExploreError(f"none of {list(self.environments.value)} measured "
                                           f"{self.probe.value} {placement or ''} in these campaigns")
            s = explore.samples(self.probe.value, placement=placement, campaigns=list(self.campaigns.value),
                                environments=envs, root=self.root)
            self._samples = s
            shown.append(explore.plot_runs(s))
            # formatting.show: reasons and sentences in full (a plain frame cuts them at 50 characters)
            shown.append(formatting.show(explore.runs_agree(s)[["environment", "campaign_id", "placement",
                                                                 "verdict", "reason"]]))
            others = [v for v in s[self.compare_by.value].astype(str).unique() if v != self.baseline.value]
            for other in others:
                # campaigns picked from two hosts are compared as asked, the sentence saying so
                shown.append(formatting.show(explore.compare(s, self.compare_by.value, other, self.baseline.value,
                                                             across_hosts=True)[["sentence"]]))
        except explore.OsbenchError as e:
            shown.append(str(e))
        show_in(self.output, *shown)

def explorer(root: str | Path | None = None, **kw):
    """The explorer widget (see :class:`Explorer`) for a notebook cell."""
    return Explorer(root, **kw).widget


#: the columns of a table the filter offers a list for, when the table has them
FILTER_COLUMNS = ("probe", "environment", "host")
ALL = "(all)"


class TableFilter:
    """A table (any frame: the estimate table, the quality report) and a list per column of
    FILTER_COLUMNS it has, '(all)' first: picking a value shows only its rows (formatting.show,
    the caption kept).  ``TableFilter(result.table()).widget`` is what a cell shows."""

    def __init__(self, table: pd.DataFrame, columns=FILTER_COLUMNS):
        import ipywidgets as w

        self.table = table
        label = dict(style={"description_width": "7.5em"})
        self.lists = {c: w.Dropdown(options=[ALL, *sorted(table[c].dropna().astype(str).unique())], value=ALL,
                                    description=c, **label)
                      for c in columns if c in table.columns}
        self.output = w.Output()
        for d in self.lists.values():
            d.observe(lambda _: self.refresh(), "value")
        self.widget = w.VBox([w.HBox(list(self.lists.values())), self.output])
        self.refresh()

    def rows(self) -> pd.DataFrame:
        """The table's rows the lists keep, its caption and legend kept."""
        keep = pd.Series(True, index=self.table.index)
        for c, d in self.lists.items():
            if d.value != ALL:
                keep &= self.table[c].astype(str) == d.value
        out = self.table[keep]
        out.attrs = dict(self.table.attrs)
        return out

    def refresh(self) -> None:
        rows = self.rows()
        show_in(self.output, formatting.show(rows) if len(rows) else "no row has these values")


def table_filter(table: pd.DataFrame, columns=FILTER_COLUMNS):
    """The filter widget (see :class:`TableFilter`) for a notebook cell."""
    return TableFilter(table, columns).widget
