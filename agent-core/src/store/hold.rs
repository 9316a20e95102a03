//! [`SessionHold`]: a hold on a session of some store, released when dropped.

use std::fmt;
use std::sync::Arc;

use super::PanicSafe;

/// A hold on one session of a store (counted by [`SessionStore::retain`]), released
/// ([`SessionStore::release`]) when dropped. The engine takes one on the session of a
/// subagent's turn while the call to it runs; when that turn suspends, the caller's session
/// keeps the hold ([`SessionStore::keep_hold`]) until a resume takes it back
/// ([`SessionStore::take_hold`]), or until the caller's session is freed, which frees the
/// subagent's with it.
///
/// [`SessionStore::retain`]: super::SessionStore::retain
/// [`SessionStore::release`]: super::SessionStore::release
/// [`SessionStore::keep_hold`]: super::SessionStore::keep_hold
/// [`SessionStore::take_hold`]: super::SessionStore::take_hold
pub struct SessionHold {
    store: Arc<PanicSafe>,
    session: Arc<str>,
    /// Released when dropped; cleared by [`keep`](Self::keep).
    armed: bool,
}

impl SessionHold {
    /// A new hold on `session` of `store`.
    pub(crate) fn retain(store: &Arc<PanicSafe>, session: Arc<str>) -> SessionHold {
        store.retain(&session);
        SessionHold {
            store: store.clone(),
            session,
            armed: true,
        }
    }

    /// The hold on `session` of `store` that a [`keep`](Self::keep) left counted.
    pub(crate) fn adopt(store: &Arc<PanicSafe>, session: Arc<str>) -> SessionHold {
        SessionHold {
            store: store.clone(),
            session,
            armed: true,
        }
    }

    /// The session held.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The session held, shared.
    pub(crate) fn id(&self) -> &Arc<str> {
        &self.session
    }

    /// Keeps the hold for good: the session stays held after this handle is gone (what a store
    /// that never frees a session does with a hold given to it, the default
    /// [`keep_hold`](super::SessionStore::keep_hold)).
    pub fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for SessionHold {
    fn drop(&mut self) {
        if self.armed {
            self.store.release(&self.session);
        }
    }
}

impl fmt::Debug for SessionHold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionHold")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}
