//! The turn lease of a SQLite file, shared by every process (and every store) opened on it: a
//! row per session in `turn_leases` naming its holder and when the lease runs out. The holder
//! renews it every third of its length while the turn runs and deletes it when the turn ends;
//! a holder that died stops renewing, and the next turn takes the lease once it ran out, or at
//! once when the holder was a process of this machine that is gone, or a turn of this process
//! whose runtime was dropped mid-turn (see [`holder_gone`]).

use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::OwnedMutexGuard;
use tokio::task::AbortHandle;

use super::SqliteStore;
use super::commit::{Commit, TurnMark};
use super::error::DbFile;
use crate::store::{LeaseHolder, ReleaseTurn, StoreError, TurnLease, now_micros};
use crate::util::{BoxFuture, new_id};

/// Takes the lease, or an expired one; `?4` is now.
const TAKE: &str = "INSERT INTO turn_leases (session_id, holder, expires_at) VALUES (?1, ?2, ?3)
    ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
    WHERE turn_leases.expires_at <= ?4";
const RENEW: &str = "UPDATE turn_leases SET expires_at = ?3 WHERE session_id = ?1 AND holder = ?2";
const GIVE_BACK: &str = "DELETE FROM turn_leases WHERE session_id = ?1 AND holder = ?2";
const HOLDER: &str = "SELECT holder FROM turn_leases WHERE session_id = ?1";

/// The first pause between two tries while another holder has the lease, and the longest.
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// Takes the turn of `session`: first in this process, then the file's lease row. Waits when
/// `wait` is true, trying again with growing pauses (up to 100 ms) while another holder's lease
/// is live; otherwise `None` at once. Dropping the future leaves no lease behind.
pub(super) async fn take(
    store: &SqliteStore,
    session: &str,
    wait: bool,
) -> Result<Option<TurnLease>, StoreError> {
    let Some(local) = store.locks.lock(session, wait).await else {
        return Ok(None);
    };
    let holder = Arc::new(LeaseHolder::new(format!(
        "{}:{}:{}",
        std::process::id(),
        machine(),
        new_id("turn")
    )));
    let length = micros(store.lease);
    let mut pause = FIRST_PAUSE;
    loop {
        // Should this future be dropped while the blocking call runs, the row it may write is
        // given back.
        let attempt = Attempt(Some(Held {
            store: store.clone(),
            session: session.to_owned(),
            holder: holder.clone(),
        }));
        let (key, who) = (session.to_owned(), holder.name().to_owned());
        // Not synced: a lease lives no longer than its process (a power loss ends both).
        let taken = store
            .write(Commit::Deferred, move |conn, file| {
                try_take(conn, file, &key, &who, length)
            })
            .await?;
        let held = attempt.settle();
        if taken {
            let heartbeat = Heartbeat(tokio::spawn(renew(held.clone())).abort_handle());
            let turn = store.turns.enter(session);
            return Ok(Some(TurnLease::new(SqliteLease {
                held,
                heartbeat,
                turn,
                local,
            })));
        }
        if !wait {
            return Ok(None);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// A lease length in microseconds, as stored.
fn micros(length: Duration) -> i64 {
    i64::try_from(length.as_micros()).unwrap_or(i64::MAX)
}

fn try_take(
    conn: &mut Connection,
    file: &DbFile,
    session: &str,
    holder: &str,
    length: i64,
) -> Result<bool, StoreError> {
    let now = now_micros();
    let sqlite = |e: rusqlite::Error| file.sqlite(&e);
    let mut take = conn.prepare_cached(TAKE).map_err(sqlite)?;
    let taken = take
        .execute(params![session, holder, now.saturating_add(length), now])
        .map_err(sqlite)?;
    if taken == 1 {
        return Ok(true);
    }
    // Held, and not run out: by a process of this machine that is gone (killed, or stopped by
    // Ctrl-C before it gave the lease back), the lease is taken now rather than when it runs
    // out (30 s by default).
    let other: Option<String> = conn
        .query_row(HOLDER, [session], |row| row.get(0))
        .optional()
        .map_err(sqlite)?;
    match other {
        Some(other) if holder_gone(&other) => {
            conn.prepare_cached(GIVE_BACK)
                .and_then(|mut statement| statement.execute(params![session, other]))
                .map_err(sqlite)?;
            let taken = take
                .execute(params![session, holder, now.saturating_add(length), now])
                .map_err(sqlite)?;
            Ok(taken == 1)
        }
        _ => Ok(false),
    }
}

/// What tells this machine's processes apart from others' in a lease's holder
/// (`pid:machine:turn`): on Linux the boot's id and the process id namespace, so that a
/// holder's process id is known to be one of this machine's, as this process sees them (not a
/// container's of its own, nor another machine's on a shared file system); empty elsewhere.
fn machine() -> &'static str {
    static MACHINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MACHINE.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id");
        let pids = std::fs::read_link("/proc/self/ns/pid");
        match (boot, pids) {
            // The namespace's link reads `pid:[4026531836]`: its number, without the colon
            // that separates a holder's parts.
            (Ok(boot), Ok(pids)) => {
                let pids = pids.to_string_lossy();
                let number: String = pids.chars().filter(char::is_ascii_digit).collect();
                format!("{}/{number}", boot.trim())
            }
            _ => String::new(),
        }
    })
}

/// Whether a lease's holder is a process of this machine that no longer runs (its process id
/// names no process, or one that exited and was not reaped yet), or a turn of this process that
/// no longer holds it (its runtime was dropped mid-turn). A holder of another machine,
/// of an older version of this store (`pid:turn`), or when this machine's processes cannot be
/// told apart, is taken as alive: its lease runs out on its own.
fn holder_gone(holder: &str) -> bool {
    let mut parts = holder.splitn(3, ':');
    let (Some(pid), Some(machine_id), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if machine_id.is_empty() || machine_id != machine() {
        return false;
    }
    if pid == std::process::id() {
        // This process: gone when nothing here holds it any more (its runtime was dropped
        // mid-turn, before the lease could be given back on it).
        return !LeaseHolder::is_live(holder);
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis: `Z` for a zombie, `X` dead.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
        Err(error) => error.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Keeps the lease alive while the turn runs: renews it every third of its length.
async fn renew(held: Held) {
    let length = micros(held.store.lease);
    loop {
        tokio::time::sleep(held.store.lease / 3).await;
        let (session, holder) = (held.session.clone(), held.holder.name().to_owned());
        let renewed = held
            .store
            .write(Commit::Deferred, move |conn, file| {
                let expires = now_micros().saturating_add(length);
                conn.prepare_cached(RENEW)
                    .and_then(|mut statement| statement.execute(params![session, holder, expires]))
                    .map_err(|e| file.sqlite(&e))
            })
            .await;
        match renewed {
            Ok(1) => {}
            Ok(_) => {
                tracing::error!(
                    session = %held.session,
                    "the turn lease ran out before it was renewed (the process stalled for longer \
                     than the lease): another turn of the session may run alongside this one"
                );
                return;
            }
            Err(error) => {
                tracing::warn!(session = %held.session, "renewing the turn lease: {error}")
            }
        }
    }
}

/// A lease row this store wrote (or may have written), by session and holder.
#[derive(Clone)]
struct Held {
    store: SqliteStore,
    session: String,
    holder: Arc<LeaseHolder>,
}

impl Held {
    /// Deletes the row, if it is still this holder's: the turn's last write, synced when one of
    /// its writes before it was not.
    async fn give_back(&self) {
        let (session, holder) = (self.session.clone(), self.holder.name().to_owned());
        let deleted = self
            .store
            .write(Commit::Flush, move |conn, file| {
                conn.prepare_cached(GIVE_BACK)
                    .and_then(|mut statement| statement.execute(params![session, holder]))
                    .map_err(|e| file.sqlite(&e))
            })
            .await;
        if let Err(error) = deleted {
            tracing::warn!(
                session = %self.session,
                "giving the turn lease back failed (it runs out on its own): {error}"
            );
        }
    }
}

/// An attempt at the lease: dropped before it knew whether it took the lease (its future was
/// dropped mid-call), it gives the lease back.
struct Attempt(Option<Held>);

impl Attempt {
    /// The attempt is over: whatever it took is the caller's.
    fn settle(mut self) -> Held {
        self.0.take().expect("an attempt settles once")
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if let (Some(held), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move { held.give_back().await });
        }
    }
}

/// Stops the renewals when dropped.
struct Heartbeat(AbortHandle);

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A turn held in this process and in the file.
struct SqliteLease {
    held: Held,
    heartbeat: Heartbeat,
    /// The session's writes are deferred while this lives.
    turn: TurnMark,
    local: OwnedMutexGuard<()>,
}

impl ReleaseTurn for SqliteLease {
    fn release(self: Box<Self>) -> BoxFuture<'static, ()> {
        let SqliteLease {
            held,
            heartbeat,
            turn,
            local,
        } = *self;
        Box::pin(async move {
            drop(heartbeat);
            held.give_back().await;
            drop(turn);
            // The row is gone before a turn of this process waiting on the session goes on.
            drop(local);
        })
    }
}
