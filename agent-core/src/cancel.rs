//! Cancellation of a turn and everything running inside it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::Notify;

/// A cheap, cloneable cancellation flag shared by a turn, its model calls and its tool calls.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

/// A token's state. A cancel goes down to the token's children as it happens, so a token is
/// cancelled exactly when its own flag is set: a waiter registers with its own token alone
/// (not with each ancestor's too: two registrations a turn fewer, `whole_turn_agent` in
/// agent-providers/benches/stream.rs), and the stream reader's check before each chunk reads
/// one flag.
#[derive(Debug, Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
    /// The tokens made with [`CancelToken::child`] that may still be alive.
    children: Mutex<Children>,
}

/// A token's children, forgotten once dropped when the list grows to `prune_at`.
#[derive(Debug, Default)]
struct Children {
    tokens: Vec<Weak<CancelInner>>,
    prune_at: usize,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: the turn ends as `aborted` at its next await point.
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// A token cancelled when this one is, or on its own (cancelling it leaves this one alone).
    pub fn child(&self) -> CancelToken {
        let child = Arc::new(CancelInner::default());
        {
            let mut children = self
                .inner
                .children
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if children.tokens.len() >= children.prune_at {
                children.tokens.retain(|token| token.strong_count() > 0);
                children.prune_at = (children.tokens.len() * 2).max(8);
            }
            children.tokens.push(Arc::downgrade(&child));
        }
        // Read once the child is listed: a cancel either set the flag before (read here) or
        // finds the child in the list.
        if self.is_cancelled() {
            child.cancel();
        }
        CancelToken { inner: child }
    }

    /// Makes this token one that cancels nobody else's: a child of it when the token is held
    /// elsewhere too (the caller's), itself when nothing else holds it (a request's own
    /// default token), which a child would only copy: an allocation, and the parent's list of
    /// children locked and grown, a turn (`whole_turn_agent_bare` in
    /// agent-providers/benches/stream.rs). A parent's cancel reaches it either way.
    pub(crate) fn make_own(&mut self) {
        if Arc::strong_count(&self.inner) > 1 {
            *self = self.child();
        }
    }

    /// Whether [`cancel`](Self::cancel) was called, on this token or a parent.
    // Inlined: the model's stream reader asks before each event (`agent-providers/benches/
    // chunks.rs`).
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Completes once the token (or a parent) is cancelled.
    pub async fn cancelled(&self) {
        let inner = &*self.inner;
        loop {
            // A `Notified` hears `notify_waiters` from the moment it is made: made before the
            // flag is read, none is missed.
            let notified = inner.notify.notified();
            if inner.cancelled.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Awaits `future` unless the token is cancelled first (`None`, `future` dropped). The
    /// future is polled first, so one that is ready wins over a cancel.
    pub(crate) async fn unless<F: Future>(&self, future: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            output = future => Some(output),
            () = self.cancelled() => None,
        }
    }
}

impl CancelInner {
    /// Sets the flag, wakes the waiters, then cancels the children.
    fn cancel(&self) {
        if self.cancelled.swap(true, Ordering::SeqCst) {
            return;
        }
        self.notify.notify_waiters();
        let children = std::mem::take(
            &mut self
                .children
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .tokens,
        );
        for child in children.iter().filter_map(Weak::upgrade) {
            child.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::CancelToken;

    /// `cancelled()` of `token` completes within a minute of the paused clock.
    async fn hears(token: &CancelToken) -> bool {
        tokio::time::timeout(Duration::from_secs(60), token.cancelled())
            .await
            .is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_parent_cancels_its_children_and_not_the_other_way() {
        let root = CancelToken::new();
        let child = root.child();
        let grandchild = child.child();
        let sibling = root.child();

        grandchild.cancel();
        assert!(grandchild.is_cancelled() && hears(&grandchild).await);
        assert!(!child.is_cancelled() && !root.is_cancelled() && !hears(&child).await);

        // Woken while waiting, at every depth.
        let waiting = tokio::spawn({
            let (child, sibling) = (child.clone(), sibling.clone());
            async move { (hears(&child).await, hears(&sibling).await) }
        });
        tokio::task::yield_now().await;
        root.cancel();
        assert_eq!(waiting.await.unwrap(), (true, true));
        assert!(child.child().is_cancelled(), "a child of a cancelled token");
        assert!(hears(&child.child().child()).await, "and its own children");
    }

    /// A token held nowhere else is made the turn's own as it is; one the caller holds too is
    /// replaced by a child, which the caller's cancel reaches and whose cancel leaves the
    /// caller's alone.
    #[tokio::test(start_paused = true)]
    async fn a_token_is_made_its_holders_own() {
        let mut alone = CancelToken::new();
        let before = Arc::as_ptr(&alone.inner);
        alone.make_own();
        assert_eq!(Arc::as_ptr(&alone.inner), before, "no child made");

        let callers = CancelToken::new();
        let mut turns = callers.clone();
        turns.make_own();
        assert!(!Arc::ptr_eq(&turns.inner, &callers.inner));
        turns.cancel();
        assert!(turns.is_cancelled() && !callers.is_cancelled());

        let mut turns = callers.clone();
        turns.make_own();
        callers.cancel();
        assert!(turns.is_cancelled() && hears(&turns).await);
    }

    /// A token that lives for many requests keeps no list of their dropped children, and still
    /// cancels the ones alive.
    #[tokio::test(start_paused = true)]
    async fn a_parent_forgets_its_dropped_children() {
        let root = CancelToken::new();
        let kept = root.child();
        for _ in 0..1000 {
            drop(root.child().child());
        }
        let listed = root.inner.children.lock().unwrap().tokens.len();
        assert!(listed <= 16, "dropped children are pruned: {listed} listed");
        root.cancel();
        assert!(kept.is_cancelled() && hears(&kept).await);
    }
}
