//! The turn lease of a session, shared by every process (and every store) connected to the
//! database: a row per session in `turn_leases` naming its holder and when the lease runs out,
//! by the server's clock. The holder renews it every third of its length while the turn runs
//! and deletes it when the turn ends; a holder that died stops renewing, and the next turn takes
//! the lease once it ran out, or at once when the holder was a turn of this process whose Tokio
//! runtime was dropped mid-turn (see [`crate::holders`]).
//!
//! A turn waiting for the lease is woken when it is given back (see [`crate::wake`]) and when
//! it runs out; while no connection listens for given-back leases it polls, 2 ms doubling up to
//! 100 ms. Turns of one process wait for a session in the order they asked: only the first
//! waits for the database's lease.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_core::{BoxFuture, LeaseHolder, ReleaseTurn, StoreError, TurnLease};
use tokio::sync::OwnedMutexGuard;
use tokio::task::AbortHandle;

use super::PostgresStore;
use crate::holders;
use crate::wake::{CHANNEL, Watch};

/// Takes the lease of `$1` for holder `$2` for `$3` µs, or an expired one: whether it took it
/// and, if not, how many µs the holder's lease has left and who holds it (null when the row
/// came after the statement's snapshot).
const TAKE: &str = "WITH taken AS (
        INSERT INTO turn_leases (session_id, holder, expires_at)
        VALUES ($1, $2, clock_timestamp() + $3 * interval '1 microsecond')
        ON CONFLICT (session_id) DO UPDATE
        SET holder = excluded.holder, expires_at = excluded.expires_at
        WHERE turn_leases.expires_at <= clock_timestamp()
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM taken),
        (SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::float8
            FROM turn_leases WHERE session_id = $1),
        (SELECT holder FROM turn_leases WHERE session_id = $1)";
/// Renews the lease of `$1` held by `$2` for `$3` µs from now.
const RENEW: &str =
    "UPDATE turn_leases SET expires_at = clock_timestamp() + $3 * interval '1 microsecond'
    WHERE session_id = $1 AND holder = $2";
/// Deletes the lease of `$1` if `$2` holds it and announces it on channel `$3` (see
/// [`crate::wake`]). A session id too long for a payload (8,000 bytes or more: the indexes
/// take one that long when it compresses well) is announced with an empty payload, which
/// wakes the waiters of every such session.
const GIVE_BACK: &str = "WITH gone AS (
        DELETE FROM turn_leases WHERE session_id = $1 AND holder = $2 RETURNING session_id
    )
    SELECT pg_notify($3, CASE WHEN octet_length(session_id) < 8000 THEN session_id ELSE '' END)
    FROM gone";

/// The first pause between two polls while another holder has the lease, and the longest.
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// Takes the turn of `session`: first in this process, then the database's lease row. Waits
/// when `wait` is true while another holder's lease is live, trying again when it is given
/// back or runs out (or polling; see the module's documentation); otherwise `None` at once.
/// Dropping the future leaves no lease behind.
pub(crate) async fn take(
    store: &PostgresStore,
    session: &str,
    wait: bool,
) -> Result<Option<TurnLease>, StoreError> {
    let Some(local) = store.locks.lock(session, wait).await else {
        return Ok(None);
    };
    static TURNS: AtomicU64 = AtomicU64::new(0);
    let turn = TURNS.fetch_add(1, Ordering::Relaxed);
    let holder = Arc::new(LeaseHolder::new(format!(
        "{}:{}:{turn}",
        std::process::id(),
        store.id
    )));
    let length = micros(store.lease);
    let mut pause = FIRST_PAUSE;
    // Registered once the lease was found taken.
    let mut watch: Option<Watch> = None;
    loop {
        // Whether to register a watch, now that the lease was found taken.
        let register = {
            let listening = match &watch {
                Some(watch) => watch.listening().await,
                None => false,
            };
            // Enabled before the lease is looked at, so a give-back after the look wakes it.
            let mut woken = pin!(watch.as_ref().filter(|_| listening).map(Watch::woken));
            if let Some(woken) = woken.as_mut().as_pin_mut() {
                woken.enable();
            }
            // Should this future be dropped while the statement runs, the row it may write is given
            // back.
            let attempt = Attempt(Some(Held {
                store: store.clone(),
                session: session.to_owned(),
                holder: holder.clone(),
            }));
            let taken = store
                .query(TAKE, &[&session, &holder.name(), &length])
                .await;
            let held = attempt.settle();
            let (taken, left, other) = outcome(store, &taken?)?;
            if let Some(other) = other.filter(|other| !taken && holders::abandoned(other)) {
                // A turn of this process whose runtime was dropped mid-turn could not give its
                // lease back: it is given back now, and taken at once.
                store
                    .execute(GIVE_BACK, &[&session, &other, &CHANNEL])
                    .await?;
                continue;
            }
            if taken {
                let heartbeat = Heartbeat(tokio::spawn(renew(held.clone())).abort_handle());
                return Ok(Some(TurnLease::new(PostgresLease {
                    held,
                    heartbeat,
                    local,
                })));
            }
            if !wait {
                return Ok(None);
            }
            match woken.as_pin_mut() {
                Some(woken) => {
                    // Until the lease is given back, or runs out (no longer than this store's own
                    // lease, should the holder's be longer).
                    let until = left.map_or(pause, |left| left.min(store.lease) + FIRST_PAUSE);
                    tokio::select! {
                        () = woken => {}
                        () = tokio::time::sleep(until) => {}
                    }
                    false
                }
                None if watch.is_none() => true,
                None => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(LONGEST_PAUSE);
                    false
                }
            }
        };
        if register {
            watch = Some(store.wakeups.watch(session));
        }
    }
}

/// Whether `TAKE` took the lease, and how long the holder's lease has left and who holds it
/// when it did not.
fn outcome(
    store: &PostgresStore,
    rows: &[tokio_postgres::Row],
) -> Result<(bool, Option<Duration>, Option<String>), StoreError> {
    let row = rows
        .first()
        .ok_or_else(|| store.server.at("taking the turn lease returned no row"))?;
    let taken: bool = row.try_get(0).map_err(|e| store.server.postgres(&e))?;
    let left: Option<f64> = row.try_get(1).map_err(|e| store.server.postgres(&e))?;
    let holder: Option<String> = row.try_get(2).map_err(|e| store.server.postgres(&e))?;
    Ok((
        taken,
        left.map(|left| Duration::from_micros(left.max(0.0) as u64)),
        holder,
    ))
}

/// A lease length in microseconds.
fn micros(length: Duration) -> f64 {
    length.as_micros() as f64
}

/// Keeps the lease alive while the turn runs: renews it every third of its length.
async fn renew(held: Held) {
    let length = micros(held.store.lease);
    loop {
        tokio::time::sleep(held.store.lease / 3).await;
        let renewed = held
            .store
            .execute(RENEW, &[&held.session, &held.holder.name(), &length])
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
    store: PostgresStore,
    session: String,
    holder: Arc<LeaseHolder>,
}

impl Held {
    /// Deletes the row, if it is still this holder's.
    async fn give_back(&self) {
        let deleted = self
            .store
            .execute(GIVE_BACK, &[&self.session, &self.holder.name(), &CHANNEL])
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

/// A turn held in this process and in the database.
struct PostgresLease {
    held: Held,
    heartbeat: Heartbeat,
    local: OwnedMutexGuard<()>,
}

impl ReleaseTurn for PostgresLease {
    fn release(self: Box<Self>) -> BoxFuture<'static, ()> {
        let PostgresLease {
            held,
            heartbeat,
            local,
        } = *self;
        Box::pin(async move {
            drop(heartbeat);
            held.give_back().await;
            // The row is gone before a turn of this process waiting on the session goes on.
            drop(local);
        })
    }
}
