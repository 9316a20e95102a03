//! Which commits wait for the disk. With `synchronous = FULL` (the default) a commit in WAL mode
//! syncs the log, one `fsync` each; a turn made eight or more of them (its lease taken and given
//! back, its user row, each reply's pending and completed writes, each tool result).
//!
//! A turn's writes now sync once per step: the write that settles a reply (stored completed or
//! failed) is synced, and so is the turn's last write (it gives the session back) when a write
//! before it was not. Every other write of a session while a turn of this store holds it (the
//! lease row, the user's message, a pending reply, tool results, compaction rows) commits
//! without waiting for the disk (`synchronous = NORMAL`). The log is written in order and a sync
//! puts all of it on disk, so each synced commit also makes every earlier one durable.
//!
//! What that changes: nothing for a crash of the process (an unsynced commit is in the log,
//! which the next open reads). A power loss or an OS crash may lose the writes a running turn
//! made since its last synced one, never a part of one and never an earlier one: the session
//! then reads as if the turn had been cut off at that earlier point (the next turn repairs it
//! as after any crash, answering calls whose results were lost with an error result), and a
//! lost give-back leaves a lease that runs out on its own. Writes outside a turn (through the
//! [`SessionStore`](crate::SessionStore) API directly) are each synced, as before.

use hashbrown::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::Connection;

use super::SqliteSync;

/// How one write commits, when the store's durability is [`SqliteSync::Full`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Commit {
    /// Synced before the call returns, with every commit before it.
    Synced,
    /// Not waited for: durable at the next synced commit (or checkpoint).
    Deferred,
    /// Synced when a commit before it was not, else deferred (a turn's last write).
    Flush,
}

/// The connection and the `synchronous` setting in force on it.
pub(super) struct Db {
    pub(super) conn: Connection,
    /// What the store was opened with: `Normal` defers every commit.
    configured: SqliteSync,
    /// What the connection runs with now (changed only between writes that differ).
    current: SqliteSync,
    /// A commit since the last synced one was deferred.
    unsynced: bool,
}

impl Db {
    /// The connection, configured with `synchronous` already set to `configured`.
    pub(super) fn new(conn: Connection, configured: SqliteSync) -> Db {
        Db {
            conn,
            configured,
            current: configured,
            unsynced: false,
        }
    }

    /// Runs one write committed as `commit` says.
    pub(super) fn write<T, E>(
        &mut self,
        commit: Commit,
        work: impl FnOnce(&mut Connection) -> Result<T, E>,
        sqlite: impl Fn(&rusqlite::Error) -> E,
    ) -> Result<T, E> {
        let synced = self.configured == SqliteSync::Full
            && match commit {
                Commit::Synced => true,
                Commit::Deferred => false,
                Commit::Flush => self.unsynced,
            };
        let wanted = if synced {
            SqliteSync::Full
        } else {
            SqliteSync::Normal
        };
        if wanted != self.current {
            self.conn
                .pragma_update(None, "synchronous", wanted.as_str())
                .map_err(|e| sqlite(&e))?;
            self.current = wanted;
        }
        let result = work(&mut self.conn);
        match (synced, &result) {
            (true, Ok(_)) => self.unsynced = false,
            // A failed synced commit syncs nothing; a deferred one may have committed.
            (true, Err(_)) => {}
            (false, _) => self.unsynced |= self.configured == SqliteSync::Full,
        }
        result
    }

    /// Whether a commit since the last synced one was deferred.
    #[cfg(test)]
    pub(super) fn unsynced(&self) -> bool {
        self.unsynced
    }

    /// What the connection runs with now.
    #[cfg(test)]
    pub(super) fn current(&self) -> SqliteSync {
        self.current
    }
}

/// The connection, also after a panic on another thread poisoned the lock: a transaction that
/// panic left open is rolled back (its caller got an error), and the connection serves on.
pub(super) fn lock(db: &Mutex<Db>) -> MutexGuard<'_, Db> {
    db.lock().unwrap_or_else(|poisoned: PoisonError<_>| {
        let guard = poisoned.into_inner();
        if !guard.conn.is_autocommit() {
            // Nothing to report to: should the rollback fail, the next statement reports the state.
            let _ = guard.conn.execute_batch("ROLLBACK");
        }
        db.clear_poison();
        guard
    })
}

/// The sessions a turn of this store (or of a clone) holds: their writes are deferred.
#[derive(Clone, Debug, Default)]
pub(super) struct InTurn(Arc<Mutex<HashSet<String>>>);

impl InTurn {
    /// How a write of `session` that does not settle a reply commits.
    pub(super) fn commit(&self, session: &str) -> Commit {
        if self.sessions().contains(session) {
            Commit::Deferred
        } else {
            Commit::Synced
        }
    }

    /// A turn took `session`: until the returned mark is dropped, its writes are deferred.
    pub(super) fn enter(&self, session: &str) -> TurnMark {
        self.sessions().insert(session.to_owned());
        TurnMark {
            turns: self.clone(),
            session: session.to_owned(),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A session held by a turn of this store; dropped when the turn gives it back.
pub(super) struct TurnMark {
    turns: InTurn,
    session: String,
}

impl Drop for TurnMark {
    fn drop(&mut self) {
        self.turns.sessions().remove(&self.session);
    }
}
