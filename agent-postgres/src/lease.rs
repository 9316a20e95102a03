//! The turn lease of a session, shared by every process (and every store) connected to the
//! database: a row per session in `turn_leases` naming its holder and when the lease runs out,
//! by the server's clock. The holder renews it every third of its length while the turn runs
//! and deletes it when the turn ends; a holder that died stops renewing, and the next turn takes
//! the lease once it ran out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_core::{BoxFuture, ReleaseTurn, StoreError, TurnLease};
use tokio::sync::OwnedMutexGuard;
use tokio::task::AbortHandle;

use super::PostgresStore;

/// Takes the lease of `$1` for holder `$2` for `$3` µs, or an expired one.
const TAKE: &str = "INSERT INTO turn_leases (session_id, holder, expires_at)
    VALUES ($1, $2, clock_timestamp() + $3 * interval '1 microsecond')
    ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
    WHERE turn_leases.expires_at <= clock_timestamp()";
/// Renews the lease of `$1` held by `$2` for `$3` µs from now.
const RENEW: &str =
    "UPDATE turn_leases SET expires_at = clock_timestamp() + $3 * interval '1 microsecond'
    WHERE session_id = $1 AND holder = $2";
/// Deletes the lease of `$1` if `$2` holds it.
const GIVE_BACK: &str = "DELETE FROM turn_leases WHERE session_id = $1 AND holder = $2";

/// The first pause between two tries while another holder has the lease, and the longest.
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// Takes the turn of `session`: first in this process, then the database's lease row. Waits
/// when `wait` is true, trying again with growing pauses (up to 100 ms) while another holder's
/// lease is live; otherwise `None` at once. Dropping the future leaves no lease behind.
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
    let holder = format!("{}:{}:{turn}", std::process::id(), store.id);
    let length = micros(store.lease);
    let mut pause = FIRST_PAUSE;
    loop {
        // Should this future be dropped while the statement runs, the row it may write is given
        // back.
        let attempt = Attempt(Some(Held {
            store: store.clone(),
            session: session.to_owned(),
            holder: holder.clone(),
        }));
        let taken = store.execute(TAKE, &[&session, &holder, &length]).await;
        let held = attempt.settle();
        if taken? == 1 {
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
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
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
            .execute(RENEW, &[&held.session, &held.holder, &length])
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
    holder: String,
}

impl Held {
    /// Deletes the row, if it is still this holder's.
    async fn give_back(&self) {
        let deleted = self
            .store
            .execute(GIVE_BACK, &[&self.session, &self.holder])
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
