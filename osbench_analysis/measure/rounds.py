"""The loop over rounds: the guests that count instructions boot side by side
first (`_count_side_by_side`), then round-robin, every open condition of
every environment one more worker per round, each environment's conditions
of one placement as one group (group.py), while adaptive precision
(plan.py) asks for more.  Every finished worker run is journaled before it
counts; the measuring bar (`progress_bar`) shows the runs planned.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import time
from dataclasses import asdict
from pathlib import Path

from osbench_analysis.catalog import registry
from osbench_analysis.measure import journal
from osbench_analysis.measure.config import CampaignConfig, Condition
from osbench_analysis.measure.group import _measure_group
from osbench_analysis.measure.plan import (_EnvRun, _needs_more, _precision_report, _run_key, _runs_to_go,
                                          projected_runs)


def _measure_rounds(parts: list[_EnvRun], cfg: CampaignConfig, cpus: list[int], progress: bool,
                    scratch: Path, jr: journal.Journal) -> float:
    """Round-robin: every open condition of every environment gets one more
    worker per round; with a precision target, rounds go on while some
    condition of some environment still needs runs.  Within a round, each
    environment gets its open conditions of one placement as one group
    (`Session.run_round`: a sandbox may boot once for the group), groups
    interleaved across environments.  Runs already in the journal are not
    measured again.  Returns the measuring seconds (those of earlier,
    interrupted attempts included)."""
    target = cfg.precision()
    max_runs = target.max_runs if target else cfg.runs
    done = {_run_key(e["env"], e["run"]["probe"], e["run"]["params_json"], e["run"]["placement"], e["run"]["run"])
            for e in jr.entries}
    open_ = {id(p): list(p.conditions) for p in parts}
    # a guest counting its instructions repeats its counts: it boots cfg.guest_boots times at most
    # (or fewer, when its counts repeat only in their minima: GuestEnvironment.boots_needed)
    # (memory events: one boot more, the first, without the model: the campaign's own check of its counts)
    boots = {id(p): min(max_runs, cfg.guest_boots, getattr(p.env, "boots_needed", 0) or cfg.guest_boots)
             + bool(cfg.memory_events) if p.env.time_unit != "ns" else max_runs for p in parts}
    # the bar's total is what is planned: every condition's first cfg.runs runs and the guests' boots, grown
    # when precision asks for more (by its projection), so that its remaining time is an estimate and not the
    # worst case (max_runs everywhere)
    # before any run, precision's projection is what this host's last campaign of the environment needed
    # (plan.projected_runs): the bar starts there instead of at the first round
    root = cfg.output or None
    planned = {}
    for p in parts:
        runs = projected_runs(p.env.name, p.conditions, target, cfg.runs, root) if p.env.time_unit == "ns" else {}
        planned[id(p)] = sum(min(runs.get((c.probe, c.placement), boots[id(p)]), boots[id(p)]) for c in p.conditions)
    bar = progress_bar(sum(planned.values()), len(done), progress)
    earlier_s = jr.entries[-1]["measuring_s"] if jr.entries else 0.0
    run, t0 = 0, time.monotonic() - earlier_s
    started: dict[str, float] = {}

    def keep(p: _EnvRun, placement: str, run: int, cond: Condition, rows, record, facts) -> None:
        # durable before it counts: a kill from here on loses nothing measured
        jr.append({"env": p.env.name, "run": asdict(record), "rows": rows, "facts": facts,
                   "measuring_s": round(time.monotonic() - t0, 3),
                   "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
        p.rows.extend(rows)
        p.runs.append(record)
        if facts and not p.facts:
            p.facts = facts
        bar.set_postfix_str(f"{p.env.name} {placement} run {run + 1}: {cond.probe}", refresh=False)
        bar.update(1)

    try:
        counting = [p for p in parts if p.env.time_unit != "ns" and open_[id(p)]]
        if counting:
            for p in counting:
                started[p.env.name] = time.monotonic()
                repeats = (f" at most (a repeat only if it ends within the {cfg.guest_budget_s:.0f} s budget)"
                           if cfg.guest_budget_s is not None and boots[id(p)] > _first_boots(cfg) else "")
                bar.write(f"{p.env.name}: measuring {len(p.conditions)} condition(s), {boots[id(p)]} boot(s){repeats}")
            sized = _count_side_by_side(counting, boots, done, cfg, cpus, scratch, keep, bar)
            # what the budget left out, and the emulation speed it was judged by: every manifest (guest_budget)
            jr.state["guest_budget"] = sized
            jr.save_state()
            for p in counting:   # p.boots set: this guest has booted its last time
                p.boots, open_[id(p)] = sized["guests"][p.env.name]["boots"], []
                # boots side by side end in any order: the campaign keeps its runs in boot order
                p.runs.sort(key=lambda r: r.run)
                p.rows.sort(key=lambda r: r["run"])
            _say_finished(bar, parts, counting, started)
        t_rounds = time.monotonic()
        while any(open_.values()):
            for placement in dict.fromkeys(c.placement for v in open_.values() for c in v):
                for p in parts:
                    group = [c for c in open_[id(p)] if c.placement == placement
                             and _run_key(p.env.name, c.probe, c.params_json, c.placement, run) not in done]
                    if not group or _stopped(p, bar, open_):
                        continue
                    if p.env.name not in started:
                        started[p.env.name] = time.monotonic()
                        bar.write(f"{p.env.name}: measuring {len(p.conditions)} condition(s)")
                    bar.set_postfix_str(f"{p.env.name} {placement} run {run + 1}", refresh=True)
                    with contextlib.closing(_measure_group(p, group, run, cfg, cpus, scratch)) as results:
                        for result in results:
                            keep(p, placement, run, *result)
                    p.failed_groups = p.failed_groups + 1 if all(r.status != "ok" for r in p.runs[-len(group):]) \
                        else 0
                    _stopped(p, bar, open_)
            run += 1
            if target is None or run < cfg.runs:
                if run >= cfg.runs:
                    _say_finished(bar, parts, [p for p in parts if open_[id(p)]], started)
                    open_ = {k: [] for k in open_}
                continue
            elapsed = time.monotonic() - t0
            for p in parts:
                if p.boots is not None or p.stopped:
                    continue
                was_open = bool(open_[id(p)])
                p.report = _precision_report(p, target, elapsed, (time.monotonic() - t_rounds) / run)
                needs = [] if p.report.stop else [c for c in p.conditions if c.probe not in registry.CANARY_PROBES
                                                   and _needs_more(p, c)]
                # the canaries go on with every round that measures something else (they watch the host)
                open_[id(p)] = needs and [c for c in p.conditions if c in needs or c.probe in registry.CANARY_PROBES]
                if was_open and not open_[id(p)]:
                    _say_finished(bar, parts, [p], started)
            bar.total = bar.n + sum(_runs_to_go(p, open_[id(p)], run, max_runs) for p in parts)
            bar.refresh()
    finally:
        bar.close()
    return time.monotonic() - t0


def _count_side_by_side(parts: list[_EnvRun], boots: dict, done: set, cfg: CampaignConfig, cpus: list[int],
                        scratch: Path, keep, bar) -> dict:
    """Every boot of the guests that count their instructions, before the timed
    rounds, side by side: each boot is a thread of its own and takes one of
    the campaign's CPUs for itself (pinned to it): at most one boot per CPU, a
    freed CPU going to the waiting boot whose guest has the most work left
    (boots left x conditions; a guest's boots in order), so that no long guest
    is left to boot alone at the end, and a guest's boots may run at the same
    time (xen-linux's two boots of about 40 s each were the phase's longest
    path one after the other).  Every boot builds its own image in its own
    folder.  Under QEMU's icount the count is the guest's own whatever else the
    host runs (docs/environments.md), so running them together changes no
    number, and no timed worker runs meanwhile.  Each boot is still a run of
    its own.  Only this thread journals (`keep`): the boots' threads hand over
    what they measured through a queue.

    With a budget (cfg.guest_budget_s) a guest's repeat boots (those after its first, or after its first two
    with memory events: `_first_boots`) are sized by this machine's measured emulation speed: every guest's
    first boots go first (the longest guest first), and a repeat boot starts only once its guest's first boot
    has ended and only if it is projected to end within the budget, from the wall time that first boot took
    here (the same jobs: the same instructions); the shortest repeat first, so that the most guests show
    whether their counts repeat.  A repeat that does not fit is left out.  Returns the record the manifest
    keeps (config["guest_budget"]): per guest its boots, those left out, its first boot's wall seconds and the
    guest instructions its batches counted per second of it (the emulation speed measured here)."""
    import queue
    import threading

    free, results, stop = list(cpus), queue.Queue(), threading.Event()
    turn = threading.Condition()
    left = {id(p): boots[id(p)] * len(p.conditions) for p in parts}
    waiting: list[tuple[int, int]] = []     # (guest, run) of the boots waiting for a CPU, in arrival order
    budget, t0, arrived = cfg.guest_budget_s, time.monotonic(), [0]
    first = {id(p): _first_wall(p, done, cfg) for p in parts}   # guest -> its first boot's wall seconds, once known
    skipped = {id(p): 0 for p in parts}
    by_id = {id(p): p for p in parts}
    # a boot an interrupted attempt measured whole (the journal) is never left out: it costs nothing now
    journaled = {(id(p), run) for p in parts for run in range(boots[id(p)])
                 if all(_run_key(p.env.name, c.probe, c.params_json, c.placement, run) in done for c in p.conditions)}

    def repeat(w: tuple[int, int]) -> bool:
        return budget is not None and w[1] >= _first_boots(cfg) and w not in journaled

    def fits(w: tuple[int, int]) -> bool:
        return time.monotonic() - t0 + first[w[0]] <= budget

    def eligible(w: tuple[int, int]) -> bool:
        return not repeat(w) or (first[w[0]] is not None and fits(w))

    def rank(w: tuple[int, int]):
        # first boots before repeats; without a budget the most work left first; with one the longest boot first
        # (its start-up allowance, Environment.round_startup_s: xen-linux's first, so that it does not end last,
        # alone), then the most work left; repeats the shortest first
        if budget is None:
            return (1, left[w[0]])
        return (1, by_id[w[0]].env.round_startup_s, left[w[0]]) if not repeat(w) else (0, -first[w[0]])

    def take_cpu(p: _EnvRun, run: int) -> int | None:
        me = (id(p), run)
        with turn:
            waiting.append(me)
            arrived[0] += 1
            turn.notify_all()
            # no boot starts before every boot has asked (the first to start is the first by rank, not the
            # first thread to run); max() keeps the first of equals: a guest's boots in the order they asked
            turn.wait_for(lambda: arrived[0] == len(threads) and (
                (repeat(me) and first[id(p)] is not None and not fits(me))
                or (free and max(filter(eligible, waiting), key=rank, default=None) == me)))
            waiting.remove(me)
            turn.notify_all()      # the next by rank may now be another waiting boot, with a CPU still free
            left[id(p)] -= len(p.conditions)
            if repeat(me) and not fits(me):    # it would end past the budget: left out
                skipped[id(p)] += 1
                turn.notify_all()
                return None
            return free.pop(0)

    def give_back(cpu: int, p: _EnvRun, run: int, wall: float) -> None:
        with turn:
            free.append(cpu)
            if run == _first_boots(cfg) - 1 and first[id(p)] is None:
                first[id(p)] = wall
            turn.notify_all()

    def boot(p: _EnvRun, run: int) -> None:
        try:
            cpu = take_cpu(p, run)
            if cpu is None:     # left out by the budget: the bar's total loses its runs
                results.put(("left out", p))
                return
            began = time.monotonic()
            try:
                if stop.is_set():
                    return
                for placement in dict.fromkeys(c.placement for c in p.conditions):
                    group = [c for c in p.conditions if c.placement == placement
                             and _run_key(p.env.name, c.probe, c.params_json, c.placement, run) not in done]
                    if not group:
                        continue
                    pinned = [cpu, *(c for c in cpus if c != cpu)]
                    with contextlib.closing(_measure_group(p, group, run, cfg, pinned, scratch)) as got:
                        for result in got:
                            results.put((p, placement, run, *result))
            finally:
                give_back(cpu, p, run, time.monotonic() - began)
        except BaseException as e:   # a guest's fault reaches the runner, which stops the campaign
            results.put(e)
        finally:
            results.put(None)

    threads = [threading.Thread(target=boot, args=(p, run), name=f"osbench-boot-{p.env.name}-{run}", daemon=True)
               for run in range(max(boots[id(p)] for p in parts)) for p in parts if run < boots[id(p)]]
    bar.set_postfix_str(f"{', '.join(p.env.name for p in parts)}: {min(len(cpus), len(threads))} side by side",
                        refresh=True)
    for t in threads:
        t.start()
    ended = 0
    try:
        while ended < len(threads):
            got = results.get()
            if got is None:
                ended += 1
            elif isinstance(got, BaseException):
                raise got
            elif got[0] == "left out":
                bar.total -= len(got[1].conditions)
                bar.refresh()
            else:
                keep(*got)
    finally:
        # on an error or Ctrl-C the sessions' close() takes the QEMUs down, and the threads end with them
        stop.set()
    for i, n in skipped.items():
        if n:
            bar.write(f"{by_id[i].env.name}: {n} repeat boot(s) left out: each would end past the guests' "
                      f"budget of {budget:.0f} s (its first boot took {first[i]:.0f} s here)")
    return {"budget_s": budget, "boots_s": round(time.monotonic() - t0, 1),
            "guests": {p.env.name: _speed(p, boots[id(p)] - skipped[id(p)], skipped[id(p)], first[id(p)], cfg)
                       for p in parts}}


def _first_boots(cfg: CampaignConfig) -> int:
    """The boots of a guest a budget never leaves out: its first (with memory events its first two: the
    plain boot that checks the model's counts, and the model's)."""
    return 1 + bool(cfg.memory_events)


def _first_wall(p: _EnvRun, done: set, cfg: CampaignConfig) -> float | None:
    """The wall seconds of a guest's last first boot (the one its repeats are like) when an interrupted
    attempt measured it already (the journal's runs: each job's record holds its share of the boot's wall),
    else None (measured as it ends)."""
    run = _first_boots(cfg) - 1
    if not p.conditions or any(_run_key(p.env.name, c.probe, c.params_json, c.placement, run) not in done
                               for c in p.conditions):
        return None
    return sum(r.wall_s for r in p.runs if r.run == run)


def _speed(p: _EnvRun, boots: int, left_out: int, first_s: float | None, cfg: CampaignConfig) -> dict:
    """A guest's line in the manifest's guest_budget: its boots, the repeats left out, its (last) first
    boot's wall seconds and the guest instructions that boot's batches counted per wall second (the
    emulation speed measured on this machine, a lower bound: the boot itself is not counted)."""
    run = _first_boots(cfg) - 1
    counted = sum(int(r.get("elapsed_ns") or 0) for r in p.rows if r.get("run") == run)
    return {"boots": boots, "left_out": left_out, "first_boot_s": round(first_s, 2) if first_s else None,
            "counted_instructions_per_s": round(counted / first_s) if first_s else None}


#: an environment of which this many groups in a row failed entirely (every worker) is stopped
FAILED_GROUPS_TO_STOP = 2


def _stopped(p: _EnvRun, bar, open_: dict) -> bool:
    """Whether the environment can measure no more (issue 41, F28: a FUSE server killed, and each of its
    11 later runs failed): its session says it died (Session.dead), or every worker of its last
    FAILED_GROUPS_TO_STOP groups failed.  Its remaining runs are skipped, said in one line."""
    if p.stopped:
        return True
    why = p.session.dead()
    if not why and p.failed_groups >= FAILED_GROUPS_TO_STOP:
        last = next((r.message for r in reversed(p.runs) if r.message), "") or "no message"
        why = f"every worker of its last {p.failed_groups} groups failed ({last.strip().splitlines()[-1][:160]})"
    if not why:
        return False
    p.stopped, open_[id(p)] = why, []
    bar.write(f"{p.env.name}: {why}: its remaining runs are skipped")
    return True


def progress_bar(total: int, initial: int, progress: bool):
    """The measuring bar: a widget in Jupyter, text on a terminal (tqdm.auto);
    under papermill, whose kernel's output goes into the output notebook, a
    second, text bar goes to the terminal papermill runs in (progress.py)."""
    from osbench_analysis.measure import progress as progress_mod

    return progress_mod.bar(total=total, initial=initial, desc="measuring", unit="worker", disable=not progress)


def _say_finished(bar, parts: list[_EnvRun], finished: list[_EnvRun], started: dict[str, float]) -> None:
    for p in finished:
        failed = sum(r.status != "ok" for r in p.runs)
        took = time.monotonic() - started.get(p.env.name, time.monotonic())
        bar.write(f"{p.env.name}: finished, {len(p.runs)} worker run(s), {failed} failed, {took:.0f} s")
