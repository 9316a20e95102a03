//! The stores made in this process, so that a lease row's holder (`pid:store:turn`) is known
//! to be a turn of this process (a store id is a UUID no other process has; a process id alone
//! is not, across machines): one whose [`LeaseHolder`] is gone left its lease when its Tokio
//! runtime was dropped mid-turn, and the next turn here takes the lease at once.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, PoisonError};

use agent_core::LeaseHolder;

static STORES: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

/// Notes that the store `id` (a UUID from the server) was made in this process.
pub(crate) fn store_made(id: &str) {
    let mut stores = STORES.lock().unwrap_or_else(PoisonError::into_inner);
    stores.insert(id.to_owned());
}

/// Whether `holder` is a turn of this process (of a store made here) that no longer holds its
/// lease: its runtime was dropped mid-turn.
pub(crate) fn abandoned(holder: &str) -> bool {
    let mut parts = holder.splitn(3, ':');
    let (Some(pid), Some(store), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let made_here = || {
        let stores = STORES.lock().unwrap_or_else(PoisonError::into_inner);
        stores.contains(store)
    };
    pid == std::process::id().to_string() && made_here() && !LeaseHolder::is_live(holder)
}

#[cfg(test)]
mod tests {
    use agent_core::LeaseHolder;

    use super::{abandoned, store_made};

    #[test]
    fn only_a_holder_of_this_process_s_store_that_no_turn_holds_is_abandoned() {
        let pid = std::process::id();
        store_made("made-here");
        let held = LeaseHolder::new(format!("{pid}:made-here:1"));
        assert!(!abandoned(held.name()), "a live holder");
        let name = held.name().to_owned();
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
