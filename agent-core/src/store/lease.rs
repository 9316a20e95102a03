//! One turn at a time per session: the lease a store gives a turn ([`TurnLease`]), and the
//! in-process turn locks every store keeps ([`TurnLocks`]).

use std::collections::HashSet;
use std::fmt;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use tokio::sync::OwnedMutexGuard;

use crate::util::{BoxFuture, catch_panic, catch_unwind};
use crate::weak_table::WeakTable;

/// A session's turn, held: while it lives no other turn of that session starts, whichever
/// agent or handle asks (and, for a store shared between processes, whichever process).
///
/// The engine gives it back with [`release`](Self::release) when the turn ends; dropping it
/// releases it too (in the background, on the Tokio runtime, when one is running).
#[must_use = "the session's turn is released when the lease is dropped"]
pub struct TurnLease {
    held: Held,
}

/// What a lease holds until it is released.
enum Held {
    /// Released already.
    Nothing,
    /// An in-process lock alone ([`TurnLocks`]): released by dropping it.
    Local(OwnedMutexGuard<()>),
    /// A store's own lease.
    Store(Box<dyn ReleaseTurn>),
}

/// What a store does to give a held turn back (see [`TurnLease::new`]).
pub trait ReleaseTurn: Send + 'static {
    /// Gives the turn back. Called at most once; the future may be dropped before it ends.
    fn release(self: Box<Self>) -> BoxFuture<'static, ()>;
}

impl TurnLease {
    /// A lease released through `held`.
    pub fn new(held: impl ReleaseTurn) -> TurnLease {
        TurnLease {
            held: Held::Store(Box::new(held)),
        }
    }

    /// A lease that is a [`TurnLocks`] guard alone (a store confined to one process).
    pub fn local(guard: OwnedMutexGuard<()>) -> TurnLease {
        TurnLease {
            held: Held::Local(guard),
        }
    }

    /// Gives the turn back, so the next turn of the session may start (a store's
    /// [`ReleaseTurn::release`] that panics is logged).
    pub async fn release(mut self) {
        match std::mem::replace(&mut self.held, Held::Nothing) {
            Held::Store(held) => give_back(held).await,
            Held::Local(guard) => drop(guard),
            Held::Nothing => {}
        }
    }
}

/// Gives a store's lease back; a panic in its [`ReleaseTurn::release`] is logged, not
/// unwound through the turn that ends (its outcome is decided by then).
async fn give_back(held: Box<dyn ReleaseTurn>) {
    let released = match catch_panic(|| held.release()) {
        Ok(future) => catch_unwind(future).await,
        Err(message) => Err(message),
    };
    if let Err(message) = released {
        tracing::error!("the store panicked giving a turn back: {message}");
    }
}

impl Drop for TurnLease {
    fn drop(&mut self) {
        if let Held::Store(held) = std::mem::replace(&mut self.held, Held::Nothing)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(give_back(held));
        }
    }
}

impl fmt::Debug for TurnLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnLease")
            .field("held", &!matches!(self.held, Held::Nothing))
            .finish()
    }
}

/// The holder name a turn of this process has its store's lease row under, known as live
/// ([`LeaseHolder::is_live`]) until dropped. A store that names its lease rows' holders keeps
/// one (shared) for as long as anything of the turn may hold the lease: the lease, an attempt at
/// it, its renewals, its give-back on its way. A turn whose Tokio runtime was dropped mid-turn
/// could not give its lease back on that runtime, but drops its holder with it: the next turn
/// of this process that finds the row under a name no longer live may take it at once, rather
/// than wait for it to run out (the SQLite and PostgreSQL stores do).
#[derive(Debug)]
pub struct LeaseHolder(String);

/// The names of this process's live lease holders, on every store.
static LIVE: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

impl LeaseHolder {
    /// Holds `name` (unique to the turn, as a lease row's holder must be) as live.
    pub fn new(name: String) -> LeaseHolder {
        live().insert(name.clone());
        LeaseHolder(name)
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// Whether a turn of this process holds `name` now.
    pub fn is_live(name: &str) -> bool {
        live().contains(name)
    }
}

impl Drop for LeaseHolder {
    fn drop(&mut self) {
        live().remove(&self.0);
    }
}

/// The live names (a panic elsewhere while they were held leaves them whole).
fn live() -> MutexGuard<'static, HashSet<String>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The turn locks of one store's sessions within this process: one lock per session id,
/// shared by every agent and handle using the store. A store embeds one and answers
/// [`SessionStore::lock_turn`](super::SessionStore::lock_turn) with [`TurnLocks::lock`]
/// (a store shared between processes adds its own cross-process lease on top).
#[derive(Default)]
pub struct TurnLocks {
    /// Each session's lock, while a turn holds it or waits on it.
    locks: WeakTable<tokio::sync::Mutex<()>>,
}

impl TurnLocks {
    /// No session locked.
    pub fn new() -> TurnLocks {
        TurnLocks::default()
    }

    /// Takes the turn of `session` in this process: waits for it when `wait` is true (in the
    /// order turns asked), else returns `None` at once when another turn holds it.
    pub async fn lock(&self, session: &str, wait: bool) -> Option<OwnedMutexGuard<()>> {
        let lock = self
            .locks
            .get_or_make(session, || tokio::sync::Mutex::new(()));
        // Tried first even when waiting: a free lock is taken without making the waiting
        // future (`whole_turn_agent` in agent-providers/benches/stream.rs). No turn jumps the
        // queue: Tokio's mutex hands a released lock to its first waiter, never leaves it free
        // while one waits.
        match lock.clone().try_lock_owned() {
            Ok(guard) => Some(guard),
            Err(_) if wait => Some(lock.lock_owned().await),
            Err(_) => None,
        }
    }
}

impl fmt::Debug for TurnLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnLocks")
            .field("sessions", &self.locks.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::TurnLocks;

    #[tokio::test]
    async fn one_turn_per_session_and_the_table_forgets_free_sessions() {
        let locks = TurnLocks::new();
        let held = locks.lock("a", false).await.expect("free");
        assert!(locks.lock("a", false).await.is_none(), "held");
        assert!(locks.lock("b", false).await.is_some(), "another session");
        drop(held);
        assert!(locks.lock("a", false).await.is_some(), "released");
        for n in 0..1000 {
            drop(locks.lock(&format!("s{n}"), false).await);
        }
        let size = locks.locks.len();
        assert!(size <= 128, "free sessions are pruned: {size} kept");
    }

    /// A released lock goes to the turns waiting on it, in the order they asked: a turn asking
    /// after the release (waiting or not) does not take it first.
    #[tokio::test]
    async fn waiting_turns_take_the_lock_in_the_order_they_asked() {
        let locks = std::sync::Arc::new(TurnLocks::new());
        let held = locks.lock("a", true).await.expect("free");
        let (order, mut taken) = tokio::sync::mpsc::unbounded_channel();
        let mut waiting = Vec::new();
        for n in 0..3 {
            let (locks, order) = (locks.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                let guard = locks.lock("a", true).await;
                order.send(n).unwrap();
                drop(guard);
            }));
            // Each waiter queues before the next one starts.
            tokio::task::yield_now().await;
        }
        drop(held);
        assert!(
            locks.lock("a", false).await.is_none(),
            "a released lock with waiters is theirs, not a late asker's"
        );
        for task in waiting {
            task.await.unwrap();
        }
        drop(order);
        let mut got = Vec::new();
        while let Some(n) = taken.recv().await {
            got.push(n);
        }
        assert_eq!(got, [0, 1, 2]);
        assert!(
            locks.lock("a", false).await.is_some(),
            "free once they are done"
        );
    }
}
