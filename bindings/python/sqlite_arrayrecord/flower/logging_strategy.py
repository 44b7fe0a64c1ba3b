# SPDX-License-Identifier: Apache-2.0
"""LoggingStrategy: the wrapper around a Flower strategy that logs its run.

Every Strategy method goes to the wrapped strategy (round numbers shifted
on a resumed run), and the wrapper records what passes through —
instructions, replies (serialized before the wrapped strategy sees them: a
DP wrapper clips them in place), aggregates, metrics, timings — one
transaction per round (RoundLog). start() opens the log, creates or
resumes the run (checking the log against its digests first), records the
Flower run that does it (flower_runs, holding the run's lease), and turns a
failure to write the log into a LogWriteError that says what to do.
"""

import json
import os
import sqlite3
import time
from logging import INFO, WARNING

from flwr.common.logger import log
from flwr.serverapp.strategy import Strategy

from ..logcheck import last_chain, problems
from ..store import LOSSY, PACKED, store_of
from ._database import now, open_log
from ._round_log import RoundLog
from ._runs import begin_segment, check_lease, create_run, default_name, end_segment, release
from ._state import class_name, restore_state, settings, state_bytes
from ._wire import ar_from_bytes
from .errors import LogWriteError, ResumeError
from .result import result_of

# SQLite's primary result codes of a log that cannot be written.
_WRITE_FAILURES = {8: "read-only", 10: "I/O error", 13: "disk full"}


class LoggingStrategy(Strategy):
    """Wraps `strategy` (any flwr.serverapp.strategy.Strategy) and logs its
    run into the SQLite database at `db` (a path, created with
    sql/schema.sql and sql/views.sql when new) under `run_name`.

    run_name: the run's name, unique in the database; None (the default)
    makes one from the strategy's class and Flower's run id
    ("FedAdam-8231440012", or the UTC time without a Context), logged when
    the run starts. context: the ServerApp's Context, to record Flower's run
    id and run config (a Strategy never sees it). resume: continue the run
    `run_name` from its last complete round (a new run when there is none).
    replies_every: log the replies' contents (arrays and metrics) every
    k-th round only; 0 never (instructions, error replies, aggregates,
    metrics and global models are always logged). notes: text for
    runs.notes. packed: store replies and global models packed, bit for bit
    (the default: about 0.6 of the raw bytes on real runs); False stores
    them as Flower's bytes, in a new database with the raw store
    (sqlite_arrayrecord.store). A database keeps the store it was made
    with: a log made raw stays raw (sqlite_arrayrecord.store.pack_database
    converts it). lossy: "float16" or "bfloat16" stores each train reply's
    update (reply - the model it started from) rounded to that float, for
    replies kept for analytics only (global models and the strategy's state
    stay exact; the logged global models are then no longer the FedAvg of
    the logged replies). These two are the run's from its start: a resumed
    run keeps the ones it was logged with.
    """

    def __init__(
        self,
        strategy,
        db,
        run_name=None,
        *,
        context=None,
        resume=False,
        replies_every=1,
        notes=None,
        packed=True,
        lossy=None,
    ):
        if not isinstance(strategy, Strategy):
            raise TypeError(f"LoggingStrategy: strategy must be a flwr Strategy, got {type(strategy).__name__}")
        if run_name is not None and (not isinstance(run_name, str) or not run_name):
            raise ValueError("LoggingStrategy: run_name must be a non-empty string (or None for a new name)")
        if resume and run_name is None:
            raise ValueError("LoggingStrategy: resume=True needs the run_name of the run to continue")
        if not isinstance(replies_every, int) or isinstance(replies_every, bool) or replies_every < 0:
            raise ValueError(f"LoggingStrategy: replies_every must be an integer >= 0, got {replies_every!r}")
        if lossy is not None and lossy not in LOSSY:
            raise ValueError(f"LoggingStrategy: lossy must be None, 'float16' or 'bfloat16', got {lossy!r}")
        if lossy is not None and not packed:
            raise ValueError("LoggingStrategy: lossy needs packed=True (the raw store keeps Flower's bytes)")
        self.strategy = strategy
        self.db_path = os.fspath(db)
        self.run_name = run_name
        self.resume = bool(resume)
        self.replies_every = replies_every
        self.packed = bool(packed)
        self.lossy = lossy
        self._context = context
        self._notes = notes
        self._settings = json.dumps(settings(strategy), sort_keys=True)
        self._log = None  # RoundLog, while start() runs
        self._last_log = None  # the RoundLog of the last start(): its figures (bench/, tests)
        self._offset = 0
        self._arrays = None  # the global model start() holds
        self._grid = None
        self._names = {}  # node id -> registered name (NodeInfo.name), as the Grid tells
        self._warned_state = False
        self._pending = None
        self._has_evaluate_fn = False

    def __repr__(self):
        return f"LoggingStrategy({self.strategy!r}, {self.db_path!r}, run_name={self.run_name!r})"

    def summary(self):
        log(INFO, "\t├──> LoggingStrategy: run %r in %s", self.run_name, self.db_path)
        self.strategy.summary()

    @property
    def _commit_seconds(self):
        """Seconds each round's COMMIT took (bench/logging_speed.py)."""
        return (self._log or self._last_log).commit_seconds

    # -- a round's end

    def _finish_round(self):
        blob, unknown = state_bytes(self.strategy)
        if unknown and not self._warned_state:
            self._warned_state = True
            log(
                WARNING,
                "LoggingStrategy: the state of %s includes %s, which the log cannot store: run %r cannot be resumed",
                class_name(self.strategy),
                ", ".join(unknown),
                self.run_name,
            )
        self._log.finish(self._arrays, blob)

    # -- the Strategy interface, delegated with the round shifted on resume

    def configure_train(self, server_round, arrays, config, grid):
        rnd = server_round + self._offset
        self._log.begin(rnd)
        return self._configure("train", self.strategy.configure_train, rnd, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        replies = self._take_replies("train", replies)
        t = time.perf_counter()
        agg_arrays, agg_metrics = self.strategy.aggregate_train(server_round + self._offset, replies)
        self._log.timed("aggregate_train", t)
        if agg_arrays is not None:
            self._arrays = agg_arrays
            self._log.aggregated()
        if agg_metrics is not None:
            self._log.result("train", agg_metrics)
        return agg_arrays, agg_metrics

    def configure_evaluate(self, server_round, arrays, config, grid):
        rnd = server_round + self._offset
        return self._configure("evaluate", self.strategy.configure_evaluate, rnd, arrays, config, grid)

    def _configure(self, phase, configure, rnd, arrays, config, grid):
        """The messages the wrapped strategy's configure_<phase> returns, as
        a list, timed; kept with the model they carry (and the time they
        left) until aggregate_<phase> gets their replies."""
        self._grid = grid
        t = time.perf_counter()
        messages = list(configure(rnd, arrays, config, grid))
        self._log.timed("configure_" + phase, t)
        self._pending = (messages, arrays, time.perf_counter())
        return messages

    def aggregate_evaluate(self, server_round, replies):
        replies = self._take_replies("evaluate", replies)
        t = time.perf_counter()
        metrics = self.strategy.aggregate_evaluate(server_round + self._offset, replies)
        self._log.timed("aggregate_evaluate", t)
        if metrics is not None:
            self._log.result("evaluate", metrics)
        if not self._has_evaluate_fn:
            self._finish_round()
        return metrics

    def _take_replies(self, phase, replies):
        """The replies to the instructions configure_<phase> sent, as a list:
        the wait for them timed, instructions and replies logged."""
        messages, arrays, sent_at = self._pending
        self._log.timed(phase + "_replies", sent_at)
        replies = list(replies)
        self._log.instructions(phase, messages, arrays)
        if any(m.metadata.src_node_id not in self._names for m in replies):
            self._names.update(_node_names(self._grid))
        self._log.replies(phase, replies, self._names)
        return replies

    def _evaluate(self, evaluate_fn, rnd, arrays):
        t = time.perf_counter()
        res = evaluate_fn(rnd, arrays)
        self._log.timed("evaluate_fn", t)
        if res is not None:
            self._log.result("server", res)
        self._finish_round()
        return res

    # -- start

    def start(
        self,
        grid,
        initial_arrays,
        num_rounds=3,
        timeout=3600,
        train_config=None,
        evaluate_config=None,
        evaluate_fn=None,
    ):
        """Strategy.start, logged (same arguments, same Result). On a
        resumed run, num_rounds is the run's total, initial_arrays is
        ignored (the last complete round's global model is used) and the
        Result covers the whole run, earlier rounds read from the database."""
        con = open_log(self.db_path, self.packed)
        run = segment = None
        try:
            run, segment, done = self._open_run(con, num_rounds)
            where = f"run {self.run_name!r} in {self.db_path}"
            self._log = RoundLog(con, run, segment, self.replies_every, last_chain(con, run), where)
            self._has_evaluate_fn = evaluate_fn is not None
            if done is None:
                result = self._start_new(
                    grid, initial_arrays, num_rounds, timeout, train_config, evaluate_config, evaluate_fn
                )
            else:
                result = self._start_resumed(
                    con, done, grid, num_rounds, timeout, train_config, evaluate_config, evaluate_fn
                )
            if segment is not None:
                con.execute("UPDATE runs SET finished_at = ? WHERE run = ?", (now(), run))
                end_segment(con, run, segment)
            return result
        except BaseException as e:
            rnd = self._log.round if self._log is not None else None
            self._close_failed(con, run, segment, e)
            failure = _WRITE_FAILURES.get(getattr(e, "sqlite_errorcode", 0) & 0xFF)
            if isinstance(e, sqlite3.OperationalError) and failure is not None:
                (last,) = con.execute(
                    "SELECT max(round) FROM rounds WHERE run = ? AND finished_at IS NOT NULL", (run,)
                ).fetchone()
                raise LogWriteError(
                    f"LoggingStrategy: cannot write run {self.run_name!r} to {self.db_path} ({failure}: {e})"
                    + (f" while logging round {rnd}" if rnd is not None else "")
                    + (f"; rounds 0-{last} are complete in the log" if last is not None else "; no round is logged")
                    + f": once the cause is gone, start the ServerApp again with run_name={self.run_name!r}, "
                    "resume=True"
                ) from e
            raise
        finally:
            if segment is not None:
                release(self.db_path, run, segment)
            self._last_log, self._log = self._log, None
            con.close()

    def _close_failed(self, con, run, segment, error):
        """After an exception: the round under way rolled back, the Flower
        run marked 'failed'. A log that cannot be written (the disk full)
        may refuse these too: the exception that stopped the run is the one
        raised, the segment stays 'running' and the next resumption finds it
        'interrupted'."""
        try:
            if self._log is not None:
                self._log.rollback()
            elif con.in_transaction:
                con.execute("ROLLBACK")
            if segment is not None:
                end_segment(con, run, segment, error)
        except sqlite3.Error as e:
            log(WARNING, "LoggingStrategy: run %r: could not mark its Flower run failed (%s)", self.run_name, e)

    def _open_run(self, con, num_rounds):
        """The run to log into: (run id, its new flower_runs segment, the
        last complete round of a resumed run or None for a new run). Read and
        written under SQLite's write lock, the lease checked before and
        under it. A new run's rows (runs, flower_runs) are written in the
        transaction of its round 0, left open here."""
        if self.run_name is not None:  # refused at once, without waiting for the lock
            row = con.execute("SELECT run FROM runs WHERE name = ?", (self.run_name,)).fetchone()
            if row is not None:
                self._check_may_continue(con, row[0])
        con.execute("BEGIN IMMEDIATE")
        try:
            out = self._open_run_locked(con, num_rounds)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        if out[2] is not None:
            con.execute("COMMIT")
        return out

    def _check_may_continue(self, con, run):
        """ResumeError unless the run of this name may be continued: resume
        asked for, and no live process logging it."""
        if not self.resume:
            raise ResumeError(
                f"LoggingStrategy: run {self.run_name!r} exists in {self.db_path}: "
                "pass resume=True to continue it, or another run_name (or none, for a new name)"
            )
        check_lease(con, run, self.run_name, self.db_path)

    def _open_run_locked(self, con, num_rounds):
        row = None
        if self.run_name is not None:
            row = con.execute("SELECT run, strategy, settings FROM runs WHERE name = ?", (self.run_name,)).fetchone()
        if row is None:
            if self.resume:
                log(INFO, "LoggingStrategy: no run %r in %s yet: starting it", self.run_name, self.db_path)
            if self.run_name is None:
                ctx = self._context
                self.run_name = default_name(con, class_name(self.strategy), ctx.run_id if ctx is not None else None)
            run = create_run(
                con,
                self.run_name,
                self._context,
                self._notes,
                class_name(self.strategy),
                self._settings,
                num_rounds,
                self._options(con),
            )
            log(
                INFO,
                "LoggingStrategy: logging run %r into %s (continue it with run_name=%r, resume=True)",
                self.run_name,
                self.db_path,
                self.run_name,
            )
            return run, begin_segment(con, run, self._context, self.db_path), None
        run, strategy_class, logged_settings = row
        self._check_may_continue(con, run)
        if strategy_class != class_name(self.strategy):
            raise ResumeError(
                f"LoggingStrategy: cannot resume run {self.run_name!r}: it ran {strategy_class}, "
                f"not {class_name(self.strategy)}"
            )
        if logged_settings != self._settings:
            raise ResumeError(
                f"LoggingStrategy: cannot resume run {self.run_name!r}: the strategy's settings differ "
                f"from the run's (logged {logged_settings}, now {self._settings})"
            )
        (done,) = con.execute(
            "SELECT max(round) FROM rounds WHERE run = ? AND finished_at IS NOT NULL", (run,)
        ).fetchone()
        if done is None:  # no round complete: round 0 again (none of it was kept)
            raise ResumeError(
                f"LoggingStrategy: cannot resume run {self.run_name!r}: it has no complete round "
                "(its round 0 never committed); start it again under another name"
            )
        wrong = problems(con, run, self.run_name, done)
        if wrong:
            raise ResumeError(
                f"LoggingStrategy: cannot resume run {self.run_name!r} from {self.db_path}: its log is not what was "
                f"logged: {'; '.join(wrong)}"
            )
        if num_rounds < done:
            raise ResumeError(
                f"LoggingStrategy: cannot resume run {self.run_name!r} to {num_rounds} rounds: {done} are done already"
            )
        if num_rounds == done:
            return run, None, done  # nothing to train: nothing is written
        return run, begin_segment(con, run, self._context, self.db_path), done

    def _options(self, con):
        """runs.options of a new run: what the logger keeps, and how the
        store packs its rows (the schema's triggers read packed and lossy)."""
        packed = self.packed and store_of(con) == PACKED
        if self.packed and not packed:
            log(
                INFO,
                "LoggingStrategy: %s has the raw store (made before packing, or with packed=False): run %r is "
                "stored raw; python -m sqlite_arrayrecord pack %s packs the database",
                self.db_path,
                self.run_name,
                self.db_path,
            )
        return {"replies_every": self.replies_every, "packed": packed, "lossy": self.lossy if packed else None}

    def _start_new(self, grid, initial_arrays, num_rounds, timeout, train_config, evaluate_config, evaluate_fn):
        self._offset = 0
        self._arrays = initial_arrays
        self._log.begin(0)  # in the transaction _open_run began
        wrapped_fn = None
        if evaluate_fn is not None:

            def wrapped_fn(server_round, arrays_):
                return self._evaluate(evaluate_fn, server_round, arrays_)

        else:
            self._finish_round()
        return Strategy.start(
            self, grid, initial_arrays, num_rounds, timeout, train_config, evaluate_config, wrapped_fn
        )

    def _start_resumed(self, con, done, grid, num_rounds, timeout, train_config, evaluate_config, evaluate_fn):
        run = self._log.run
        (state,) = con.execute("SELECT state FROM strategy_state WHERE run = ? AND round = ?", (run, done)).fetchone()
        # Rounds beyond the last complete one (none in a WAL database, whose
        # round transactions are atomic) are left alone.
        restore_state(self.strategy, state)
        if num_rounds == done:
            log(
                INFO,
                "LoggingStrategy: run %r is complete (%s of %s rounds): nothing to train; returning its logged Result",
                self.run_name,
                done,
                num_rounds,
            )
            return result_of(con, run)
        (blob,) = con.execute("SELECT rec FROM global_models WHERE run = ? AND round = ?", (run, done)).fetchone()
        arrays = ar_from_bytes(blob)
        self._arrays = arrays
        self._offset = done
        con.execute("UPDATE runs SET num_rounds = ?, finished_at = NULL WHERE run = ?", (num_rounds, run))
        log(
            INFO,
            "LoggingStrategy: resuming run %r after round %s of %s (Flower counts the rounds left from 1)",
            self.run_name,
            done,
            num_rounds,
        )
        wrapped_fn = None
        if evaluate_fn is not None:

            def wrapped_fn(server_round, arrays_):
                if server_round == 0:
                    return None  # round `done`'s evaluation is in the log
                return self._evaluate(evaluate_fn, server_round + done, arrays_)

        Strategy.start(self, grid, arrays, num_rounds - done, timeout, train_config, evaluate_config, wrapped_fn)
        return result_of(con, run)


def _node_names(grid):
    """node id -> registered name of the Grid's nodes (NodeInfo.name, set for
    SuperNodes registered with a name; none in simulation)."""
    if grid is None:
        return {}
    return {n.node_id: (n.name if n.HasField("name") else None) for n in grid.get_nodes()}
