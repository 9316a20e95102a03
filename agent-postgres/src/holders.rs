//! This process's turn-lease holders: the stores made here and the holders a turn here still
//! has, so that a lease left by a turn of this process whose Tokio runtime was dropped
//! mid-turn (it could not give the lease back on that runtime) is taken at once, not after it
//! runs out.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// The ids of the stores made in this process, and the holders live in it.
#[derive(Default)]
struct Local {
    stores: HashSet<String>,
    live: HashSet<String>,
}

static LOCAL: LazyLock<Mutex<Local>> = LazyLock::new(Mutex::default);

/// The registry (a panic elsewhere while it was held leaves it whole).
fn local() -> MutexGuard<'static, Local> {
    LOCAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Notes that the store `id` (a UUID from the server) was made in this process.
pub(crate) fn store_made(id: &str) {
    local().stores.insert(id.to_owned());
}

/// A holder name (`pid:store:turn`) a turn of this process may have a lease row under, live
/// until the last of the turn's holds on it (its lease, an attempt, the renewals, a give-back
/// on its way) is dropped.
pub(crate) struct Live(pub(crate) String);

impl Live {
    pub(crate) fn new(holder: String) -> Live {
        local().live.insert(holder.clone());
        Live(holder)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        local().live.remove(&self.0);
    }
}

/// Whether `holder` is a turn of this process (of a store made here, whose id no other process
/// has) that no longer holds its lease: its runtime was dropped mid-turn.
pub(crate) fn abandoned(holder: &str) -> bool {
    let mut parts = holder.splitn(3, ':');
    let (Some(pid), Some(store), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    if pid != std::process::id().to_string() {
        return false;
    }
    let local = local();
    local.stores.contains(store) && !local.live.contains(holder)
}

#[cfg(test)]
mod tests {
    use super::{Live, abandoned, store_made};

    #[test]
    fn only_a_holder_of_this_process_s_store_that_no_turn_holds_is_abandoned() {
        let pid = std::process::id();
        store_made("made-here");
        let held = Live::new(format!("{pid}:made-here:1"));
        assert!(!abandoned(&held.0), "a live holder");
        let name = held.0.clone();
        drop(held);
        assert!(abandoned(&name), "its turn let go of it");
        assert!(
            !abandoned(&format!("{pid}:made-elsewhere:1")),
            "another process's store"
        );
        assert!(
            !abandoned(&format!("{}:made-here:1", pid + 1)),
            "another process"
        );
        assert!(!abandoned("made-here"), "not a holder");
    }
}
