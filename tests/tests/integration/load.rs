//! The load and fault test of issue 12: worker processes (`serve_sessions`) serve the same
//! sessions of one PostgreSQL database at once, each session taking turns from every worker.
//! Checked from the stored rows: each session is whole, its turns never overlapped (a turn's
//! rows are consecutive and their times, by the server's clock, end before the next turn's
//! begin), and no message was lost or doubled (every worker's turns, each exactly once, in its
//! order, complete). Then the same with one worker killed with SIGKILL mid-turn: its sessions go
//! on with the other workers once its lease ran out, its cut turns are repaired, every turn it
//! reported done is stored whole. Prints turns per second and p50/p99 turn latency, beside one
//! process on PostgreSQL and on SQLite.
//!
//! Bounded for CI (3 workers x 6 sessions x 8 turns per worker and session); a bigger run:
//! `LOAD_WORKERS=4 LOAD_SESSIONS=16 LOAD_TURNS=25 cargo test -p tests --test integration --
//! load:: --test-threads=1 --nocapture`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agent_core::{Message, MessageStatus, StoredMessage};
use tests::assert_whole;

use crate::durability::Db;

/// The size of a run: every worker runs `turns` turns in each of `sessions` sessions.
#[derive(Clone, Copy, Debug)]
struct Load {
    workers: usize,
    sessions: usize,
    turns: usize,
}

impl Load {
    /// The bounded CI load, or the one `LOAD_WORKERS`, `LOAD_SESSIONS` and `LOAD_TURNS` give.
    fn from_env() -> Load {
        let var = |name: &str, default: usize| {
            std::env::var(name)
                .ok()
                .map(|value| value.parse().expect("a number"))
                .unwrap_or(default)
        };
        Load {
            workers: var("LOAD_WORKERS", 3).max(2),
            sessions: var("LOAD_SESSIONS", 6),
            turns: var("LOAD_TURNS", 8),
        }
    }
}

/// A turn a worker reported done: session, turn, and its latency as the worker saw it.
struct Done {
    session: usize,
    turn: usize,
    micros: u64,
}

/// A running `serve_sessions`, killed if dropped while it runs (a failing test leaves no
/// worker behind).
struct Worker {
    child: Child,
    /// Reads its output: says `READY` once, returns the turns it reported done.
    reader: Option<JoinHandle<Vec<Done>>>,
    ready: mpsc::Receiver<()>,
}

impl Worker {
    /// Starts worker `worker` on `db` with `extra` options.
    fn start(db: &Db, worker: usize, sessions: usize, turns: usize, extra: &[String]) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_serve_sessions"))
            .arg(db.arg())
            .args([worker, sessions, turns].map(|n| n.to_string()))
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start a worker");
        let stdout = child.stdout.take().expect("its stdout");
        let (said_ready, ready) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut done = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let words: Vec<&str> = line.split(' ').collect();
                match words[..] {
                    ["READY"] => {
                        let _ = said_ready.send(());
                    }
                    ["done", session, turn, micros] => done.push(Done {
                        session: session.parse().expect("a session"),
                        turn: turn.parse().expect("a turn"),
                        micros: micros.parse().expect("micros"),
                    }),
                    _ => panic!("a worker said `{line}`"),
                }
            }
            done
        });
        Worker {
            child,
            reader: Some(reader),
            ready,
        }
    }

    /// Waits (at most two minutes) for the worker to exit; panics unless it succeeded. Returns
    /// the turns it reported done.
    fn finish(mut self) -> Vec<Done> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for a worker") {
                assert!(status.success(), "a worker failed: {status}");
                break;
            }
            assert!(Instant::now() < deadline, "a worker still runs after 2 min");
            std::thread::sleep(Duration::from_millis(10));
        }
        self.output()
    }

    /// Kills the worker with SIGKILL once it says `READY`; returns the turns it reported done.
    fn kill_when_ready(mut self) -> Vec<Done> {
        self.ready
            .recv_timeout(Duration::from_secs(120))
            .expect("the doomed worker hangs in a tool call");
        self.child.kill().expect("SIGKILL the worker");
        let status = self.child.wait().expect("reap the worker");
        assert!(!status.success(), "killed: {status}");
        self.output()
    }

    fn output(&mut self) -> Vec<Done> {
        let reader = self.reader.take().expect("read once");
        reader.join().expect("the reader")
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One turn's rows: the user's message `w{worker} t{turn}` and the rows after it, up to the
/// next user message.
struct TurnRows<'a> {
    worker: usize,
    turn: usize,
    rows: &'a [StoredMessage],
}

impl TurnRows<'_> {
    /// Whether the turn is stored whole: its message, the call of `work`, the tool's result
    /// and the answer, each completed.
    fn complete(&self) -> bool {
        let name = format!("w{} t{}", self.worker, self.turn);
        let texts: Vec<&str> = self.rows.iter().map(|row| row.message.text()).collect();
        let calls_work = matches!(
            &self.rows.get(1).map(|row| &row.message),
            Some(Message::Assistant { tool_calls, .. })
                if tool_calls.len() == 1 && tool_calls[0].name == "work"
        );
        texts
            == [
                name.as_str(),
                "",
                &format!("worked {name}"),
                &format!("done {name}"),
            ]
            && calls_work
            && self
                .rows
                .iter()
                .all(|row| row.status == MessageStatus::Completed)
    }
}

/// A session's rows cut into turns, each starting at a user message.
fn turns_of(rows: &[StoredMessage]) -> Vec<TurnRows<'_>> {
    let starts: Vec<usize> = (0..rows.len())
        .filter(|&at| matches!(rows[at].message, Message::User { .. }))
        .collect();
    assert_eq!(
        starts.first(),
        Some(&0),
        "a session starts with a user message"
    );
    starts
        .iter()
        .zip(starts.iter().skip(1).chain([&rows.len()]))
        .map(|(&start, &end)| {
            let text = rows[start].message.text();
            let parsed = text
                .strip_prefix('w')
                .and_then(|rest| rest.split_once(" t"))
                .and_then(|(w, t)| Some((w.parse().ok()?, t.parse().ok()?)));
            let Some((worker, turn)) = parsed else {
                panic!("not a worker's message: {text}")
            };
            TurnRows {
                worker,
                turn,
                rows: &rows[start..end],
            }
        })
        .collect()
}

/// What a run did, from the stored rows and the workers' reports.
struct Measured {
    turns: usize,
    /// From the first row of a worker of the run to the last, by the store's clock.
    span: Duration,
    latencies: Vec<u64>,
    /// Turns the killed worker left cut.
    interrupted: usize,
    /// Cut turns after another turn, whose next turn was checked to begin only once their
    /// lease ran out.
    leases_checked: usize,
}

impl Measured {
    fn turns_per_second(&self) -> f64 {
        self.turns as f64 / self.span.as_secs_f64()
    }

    fn percentile(&self, p: usize) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let at = (sorted.len() * p / 100).min(sorted.len() - 1);
        Duration::from_micros(sorted[at])
    }

    fn report(&self, what: &str) {
        eprintln!(
            "{what}: {} turns in {:.2?}: {:.0} turns/s; latency p50 {:.1?}, p99 {:.1?}",
            self.turns,
            self.span,
            self.turns_per_second(),
            self.percentile(50),
            self.percentile(99),
        );
    }
}

/// What the check expects of the workers of a run.
struct Expected<'a> {
    /// Workers whose every turn completed, and how many turns each ran per session.
    whole: &'a [(usize, usize)],
    /// The worker killed mid-run, and what it reported done before.
    killed: Option<(usize, &'a [Done])>,
    /// The workers whose turns are measured.
    measured: &'a [usize],
    /// The turn lease the killed worker held.
    lease: Duration,
}

/// Checks every session of `db` and measures the run: whole sessions, turns that never
/// overlapped, every turn of a whole worker exactly once and in order, the killed worker's turns
/// each once, in order, all complete but the last one of a session it cut (a cut turn ends
/// before the next turn, which began only once the cut turn's lease ran out), and every turn it
/// reported done stored whole.
async fn check(db: &Db, sessions: usize, expected: Expected<'_>, reports: Vec<Done>) -> Measured {
    let store = db.open().await;
    let (mut first, mut last, mut turns) = (i64::MAX, i64::MIN, 0);
    let (mut interrupted, mut leases_checked) = (0, 0);
    for session in 0..sessions {
        let rows = store
            .load(&format!("load-{session}"))
            .await
            .expect("load a session");
        assert_whole(&rows);
        let cut = turns_of(&rows);
        for (one, next) in cut.iter().zip(cut.iter().skip(1)) {
            let (end, start) = (one.rows.last().expect("rows"), &next.rows[0]);
            assert!(
                end.created_at <= start.created_at,
                "session {session}: w{} t{} overlaps w{} t{}: {rows:#?}",
                one.worker,
                one.turn,
                next.worker,
                next.turn
            );
        }
        for turn in &cut {
            assert!(
                turn.rows
                    .windows(2)
                    .all(|pair| pair[0].created_at <= pair[1].created_at),
                "session {session}: the rows of a turn go back in time: {rows:#?}"
            );
        }
        for &(worker, count) in expected.whole {
            let mine: Vec<&TurnRows> = cut.iter().filter(|t| t.worker == worker).collect();
            let order: Vec<usize> = mine.iter().map(|t| t.turn).collect();
            assert_eq!(
                order,
                (0..count).collect::<Vec<_>>(),
                "session {session}: the turns of worker {worker}, each once, in order"
            );
            assert!(
                mine.iter().all(|t| t.complete()),
                "session {session}: a turn of worker {worker} is not whole: {rows:#?}"
            );
        }
        if let Some((killed, reported)) = expected.killed {
            let mine: Vec<&TurnRows> = cut.iter().filter(|t| t.worker == killed).collect();
            let order: Vec<usize> = mine.iter().map(|t| t.turn).collect();
            assert_eq!(
                order,
                (0..mine.len()).collect::<Vec<_>>(),
                "session {session}: the killed worker's turns, each once, in order"
            );
            let whole = mine.iter().take_while(|t| t.complete()).count();
            assert!(
                whole + 1 >= mine.len(),
                "session {session}: only its last turn may be cut: {rows:#?}"
            );
            for done in reported.iter().filter(|done| done.session == session) {
                assert!(
                    done.turn < whole,
                    "session {session}: turn {} was reported done, and is not stored whole",
                    done.turn
                );
            }
            if whole < mine.len() {
                interrupted += 1;
                let at = cut
                    .iter()
                    .position(|t| t.worker == killed && t.turn == whole)
                    .expect("the cut turn");
                let next = cut.get(at + 1).expect("a turn after the cut one");
                // The cut turn took its lease after the turn before it ended, and the next turn
                // could take it only once it ran out.
                if let Some(before) = at.checked_sub(1) {
                    let ended = cut[before].rows.last().expect("rows").created_at;
                    let lease = i64::try_from(expected.lease.as_micros()).expect("µs");
                    assert!(
                        next.rows[0].created_at >= ended + lease,
                        "session {session}: the turn after the cut one began before its lease \
                         ran out"
                    );
                    leases_checked += 1;
                }
            }
        }
        for turn in cut.iter().filter(|t| expected.measured.contains(&t.worker)) {
            first = first.min(turn.rows[0].created_at);
            last = last.max(turn.rows.last().expect("rows").created_at);
            turns += usize::from(turn.complete());
        }
    }
    Measured {
        turns,
        span: Duration::from_micros(u64::try_from(last - first).expect("a span")),
        latencies: reports.iter().map(|done| done.micros).collect(),
        interrupted,
        leases_checked,
    }
}

/// `workers` worker processes, each running `turns` turns in each session, at once.
fn serve(db: &Db, workers: usize, load: Load, turns: usize) -> Vec<Done> {
    let running: Vec<Worker> = (0..workers)
        .map(|worker| Worker::start(db, worker, load.sessions, turns, &[]))
        .collect();
    running.into_iter().flat_map(Worker::finish).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_processes_serve_shared_postgres_sessions_without_overlap_or_loss() {
    let load = Load::from_env();
    let db = Db::postgres("load").await;
    let reports = serve(&db, load.workers, load, load.turns);
    assert_eq!(reports.len(), load.workers * load.sessions * load.turns);
    let whole: Vec<(usize, usize)> = (0..load.workers).map(|w| (w, load.turns)).collect();
    let measured: Vec<usize> = (0..load.workers).collect();
    let expected = Expected {
        whole: &whole,
        killed: None,
        measured: &measured,
        lease: Duration::ZERO,
    };
    let many = check(&db, load.sessions, expected, reports).await;
    assert_eq!(many.turns, load.workers * load.sessions * load.turns);

    // The same turns from one process, on PostgreSQL and on SQLite.
    let mut single = Vec::new();
    for db in [Db::postgres("load-one").await, Db::sqlite("load-one")] {
        let reports = serve(&db, 1, load, load.workers * load.turns);
        let expected = Expected {
            whole: &[(0, load.workers * load.turns)],
            killed: None,
            measured: &[0],
            lease: Duration::ZERO,
        };
        single.push(check(&db, load.sessions, expected, reports).await);
    }
    eprintln!("{load:?}, each turn two model steps and one tool call:");
    many.report(&format!("PostgreSQL, {} processes", load.workers));
    single[0].report("PostgreSQL, 1 process");
    single[1].report("SQLite, 1 process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_turn_leaves_its_sessions_to_the_others_after_its_lease() {
    let load = Load::from_env();
    let lease = Duration::from_secs(2);
    let options = ["--lease-ms".to_owned(), lease.as_millis().to_string()];
    let db = Db::postgres("load-fault").await;
    let doomed = load.workers - 1;
    let survivors: Vec<Worker> = (0..doomed)
        .map(|worker| Worker::start(&db, worker, load.sessions, load.turns, &options))
        .collect();
    // It hangs in a tool call once it has done a third of its turns, and is killed there.
    let hang = [
        options.to_vec(),
        vec![
            "--hang-after".to_owned(),
            (load.sessions * load.turns / 3).to_string(),
        ],
    ]
    .concat();
    let killed = Worker::start(&db, doomed, load.sessions, load.turns, &hang).kill_when_ready();
    let reports: Vec<Done> = survivors.into_iter().flat_map(Worker::finish).collect();
    // A late worker runs one more turn in each session: a turn the killed worker cut last in
    // a session is repaired by it.
    let late = load.workers;
    Worker::start(&db, late, load.sessions, 1, &options).finish();

    let mut whole: Vec<(usize, usize)> = (0..doomed).map(|w| (w, load.turns)).collect();
    whole.push((late, 1));
    let measured: Vec<usize> = (0..load.workers).collect();
    let expected = Expected {
        whole: &whole,
        killed: Some((doomed, &killed)),
        measured: &measured,
        lease,
    };
    let run = check(&db, load.sessions, expected, reports).await;
    assert!(
        run.leases_checked >= 1,
        "the turn hanging in its tool call (never a worker's first in its session) was cut"
    );
    run.report(&format!(
        "PostgreSQL, {} processes, one killed mid-turn ({} turns cut), lease {lease:?}",
        load.workers, run.interrupted
    ));
}
