//! A turn's future that, dropped before it finished, cancels the turn and lets it finish on a
//! task of its own: its rows settled, its hooks fired, as every turn ends.

use std::pin::Pin;
use std::task::{Context, Poll};

use crate::cancel::CancelToken;
use crate::util::BoxFuture;

/// A turn (and what it hands back with its result) that finishes even when dropped: a
/// `tokio::time::timeout` around `Conversation::run`, a subagent's turn whose calling turn
/// was cancelled or whose call timed out.
pub(crate) struct FinishOnDrop<T: Send + 'static> {
    turn: Option<BoxFuture<'static, T>>,
    cancel: CancelToken,
}

impl<T: Send + 'static> FinishOnDrop<T> {
    /// `turn`, cancelled through `cancel` when dropped before it finished.
    pub(crate) fn new(turn: BoxFuture<'static, T>, cancel: CancelToken) -> Self {
        FinishOnDrop {
            turn: Some(turn),
            cancel,
        }
    }
}

impl<T: Send + 'static> Future for FinishOnDrop<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(turn) = self.turn.as_mut() else {
            panic!("a turn polled after it finished");
        };
        let result = std::task::ready!(turn.as_mut().poll(cx));
        self.turn = None;
        Poll::Ready(result)
    }
}

impl<T: Send + 'static> Drop for FinishOnDrop<T> {
    fn drop(&mut self) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        self.cancel.cancel();
        // Without a runtime (it is shutting down) the turn stops where it is; the next turn
        // repairs the session as after a crash.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(turn);
        }
    }
}
