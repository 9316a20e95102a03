//! The stream API's handle on a running turn ([`TurnStream`]).

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::mpsc;

use crate::cancel::CancelToken;
use crate::engine::TurnEvent;

/// The events of one turn, as they happen. Dropping it before [`TurnEvent::Finished`] cancels
/// the turn (it still ends on its task, as `aborted`, with on_chat_response fired once).
#[derive(Debug)]
pub struct TurnStream {
    receiver: mpsc::Receiver<TurnEvent>,
    /// The turn's token, cancelled when the stream is dropped before the turn finished.
    cancel: CancelToken,
    finished: bool,
}

impl Stream for TurnStream {
    type Item = TurnEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        let polled = self.receiver.poll_recv(cx);
        if let Poll::Ready(None | Some(TurnEvent::Finished(_))) = &polled {
            self.finished = true;
        }
        polled
    }
}

impl Drop for TurnStream {
    fn drop(&mut self) {
        if !self.finished {
            self.cancel.cancel();
        }
    }
}

impl TurnStream {
    pub(super) fn new(receiver: mpsc::Receiver<TurnEvent>, cancel: CancelToken) -> Self {
        TurnStream {
            receiver,
            cancel,
            finished: false,
        }
    }

    /// The next event, or `None` after [`TurnEvent::Finished`].
    pub async fn next(&mut self) -> Option<TurnEvent> {
        let event = self.receiver.recv().await;
        if matches!(event, None | Some(TurnEvent::Finished(_))) {
            self.finished = true;
        }
        event
    }
}
