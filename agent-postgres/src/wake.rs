//! Waking the turns that wait for a session when its lease is given back: the store that gives
//! a lease back sends `NOTIFY agent_turn_leases` with the session id as payload, and each store
//! keeps one connection that `LISTEN`s on that channel, opened when a turn of the store first
//! waits, and wakes the waiters of the session named. Every waiter also wakes when the lease it
//! waits for runs out (a holder killed mid-turn sends nothing) and when the listening
//! connection ends; while no connection listens, waiters poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls};

use crate::error::Server;

/// The channel a given-back lease is announced on, with the session id as payload.
pub(crate) const CHANNEL: &str = "agent_turn_leases";

/// The longest payload a notification carries, in bytes (PostgreSQL's limit is below 8,000):
/// a longer session id is announced with an empty payload (see `GIVE_BACK` in `lease.rs`).
const LONGEST_PAYLOAD: usize = 7_999;

/// How long a store waits before it tries to listen again after a connection failed.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The listening connection of a store (and its clones) and the sessions its turns wait for.
pub(crate) struct Wakeups {
    config: Config,
    server: Server,
    /// The waiters of each session a turn of this store waits for.
    waiters: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    listener: tokio::sync::Mutex<Listener>,
}

/// The listening connection, if open, and when to try again after a failure.
#[derive(Default)]
struct Listener {
    client: Option<Client>,
    retry_at: Option<Instant>,
}

impl Wakeups {
    /// No connection yet; it is opened, with `config`, when a turn first waits.
    pub(crate) fn new(config: Config, server: Server) -> Wakeups {
        Wakeups {
            config,
            server,
            waiters: Arc::default(),
            listener: tokio::sync::Mutex::default(),
        }
    }

    /// Registers a waiter for `session`; it stays registered until dropped.
    pub(crate) fn watch(self: &Arc<Self>, session: &str) -> Watch {
        let notify = lock(&self.waiters)
            .entry(session.to_owned())
            .or_default()
            .clone();
        Watch {
            wakeups: self.clone(),
            session: session.to_owned(),
            notify,
        }
    }

    /// Whether a connection listens on the channel, opening one if none does (at most once per
    /// [`RETRY_AFTER`] after a failure). A notification sent after this returned true reaches
    /// the waiters, or the connection's end wakes them all.
    async fn listening(&self) -> bool {
        let mut listener = self.listener.lock().await;
        if listener.client.as_ref().is_some_and(|c| !c.is_closed()) {
            return true;
        }
        listener.client = None;
        if listener.retry_at.is_some_and(|at| Instant::now() < at) {
            return false;
        }
        match self.listen().await {
            Ok(client) => {
                listener.client = Some(client);
                listener.retry_at = None;
                true
            }
            Err(error) => {
                tracing::warn!(
                    "session store {}: cannot listen for given-back turn leases, polling \
                     instead: {error}",
                    self.server
                );
                listener.retry_at = Some(Instant::now() + RETRY_AFTER);
                false
            }
        }
    }

    /// Opens a connection, runs its messages on a task of its own and listens on the channel.
    async fn listen(&self) -> Result<Client, tokio_postgres::Error> {
        let (client, mut connection) = self.config.connect(NoTls).await?;
        let waiters = self.waiters.clone();
        let server = self.server.clone();
        tokio::spawn(async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(AsyncMessage::Notification(note))) => {
                        wake(&lock(&waiters), note.payload());
                    }
                    Some(Ok(_)) => {}
                    Some(Err(error)) => {
                        tracing::warn!(
                            "session store {server}: the connection listening for given-back \
                             turn leases failed: {error}"
                        );
                        break;
                    }
                    None => break,
                }
            }
            // Nobody hears the channel now: every waiter looks again.
            for notify in lock(&waiters).values() {
                notify.notify_waiters();
            }
        });
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        Ok(client)
    }
}

/// Wakes the waiters of the session a notification names. An empty payload stands for every
/// session whose id is too long for a payload (longer than [`LONGEST_PAYLOAD`] bytes), and for
/// the empty id: their waiters all look again, and those whose lease is still held wait on.
fn wake(waiters: &HashMap<String, Arc<Notify>>, payload: &str) {
    if payload.is_empty() {
        waiters
            .iter()
            .filter(|(session, _)| session.is_empty() || session.len() > LONGEST_PAYLOAD)
            .for_each(|(_, notify)| notify.notify_waiters());
    } else if let Some(notify) = waiters.get(payload) {
        notify.notify_waiters();
    }
}

/// A turn waiting for a session: woken when the session's lease is given back.
pub(crate) struct Watch {
    wakeups: Arc<Wakeups>,
    session: String,
    notify: Arc<Notify>,
}

impl Watch {
    /// Whether a connection listens for the session's lease (see [`Wakeups::listening`]).
    pub(crate) async fn listening(&self) -> bool {
        self.wakeups.listening().await
    }

    /// The session's next wake-up, counted from now: enable it before looking at the lease.
    pub(crate) fn woken(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut waiters = lock(&self.wakeups.waiters);
        // This watch and the map hold the last two handles: nobody else waits for the session.
        if Arc::strong_count(&self.notify) == 2 {
            waiters.remove(&self.session);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
