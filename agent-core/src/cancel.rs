//! Cancellation of a turn and everything running inside it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// A cheap, cloneable cancellation flag shared by a turn, its model calls and its tool calls.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

#[derive(Debug, Default)]
struct CancelInner {
    cancelled: AtomicBool,
    notify: Notify,
    /// The tokens whose cancellation cancels this one too (its parent, the parent's parent...).
    ancestors: Vec<Arc<CancelInner>>,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: the turn ends as `aborted` at its next await point.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// A token cancelled when this one is, or on its own (cancelling it leaves this one alone).
    pub fn child(&self) -> CancelToken {
        let mut ancestors = Vec::with_capacity(self.inner.ancestors.len() + 1);
        ancestors.push(self.inner.clone());
        ancestors.extend(self.inner.ancestors.iter().cloned());
        CancelToken {
            inner: Arc::new(CancelInner {
                ancestors,
                ..CancelInner::default()
            }),
        }
    }

    /// Whether [`cancel`](Self::cancel) was called, on this token or a parent.
    // Inlined, and written out rather than through `tokens()` (which then stays a call): the
    // model's stream reader asks before each event, and the calls cost about 20 instructions
    // per chunk (`agent-providers/benches/chunks.rs`).
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
            || self
                .inner
                .ancestors
                .iter()
                .any(|inner| inner.cancelled.load(Ordering::SeqCst))
    }

    /// Completes once the token (or a parent) is cancelled.
    pub async fn cancelled(&self) {
        // Without a parent or with one (every turn's token is a child of its request's), no
        // allocation.
        match self.inner.ancestors.as_slice() {
            [] => return wait(&self.inner).await,
            [parent] => {
                return tokio::select! {
                    () = wait(&self.inner) => {}
                    () = wait(parent) => {}
                };
            }
            _ => {}
        }
        loop {
            // A `Notified` hears `notify_waiters` from the moment it is made: made before the
            // flags are read, none is missed.
            let mut notified: Vec<_> = self
                .tokens()
                .map(|inner| Box::pin(inner.notify.notified()))
                .collect();
            if self.is_cancelled() {
                return;
            }
            std::future::poll_fn(|cx| {
                for waiting in &mut notified {
                    if waiting.as_mut().poll(cx).is_ready() {
                        return std::task::Poll::Ready(());
                    }
                }
                std::task::Poll::Pending
            })
            .await;
        }
    }

    /// This token's state and its ancestors' (innermost first).
    fn tokens(&self) -> impl Iterator<Item = &CancelInner> {
        std::iter::once(&*self.inner).chain(self.inner.ancestors.iter().map(|inner| &**inner))
    }
}

/// Completes once `inner` itself is cancelled.
async fn wait(inner: &CancelInner) {
    loop {
        let notified = inner.notify.notified();
        if inner.cancelled.load(Ordering::SeqCst) {
            return;
        }
        notified.await;
    }
}

#[cfg(test)]
mod tests {
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
    }
}
