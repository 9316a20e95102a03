//! The stream API's handle on a running turn ([`TurnStream`]).

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::mpsc;

use crate::engine::TurnEvent;

/// The events of one turn, as they happen.
#[derive(Debug)]
pub struct TurnStream {
    receiver: mpsc::Receiver<TurnEvent>,
}

impl Stream for TurnStream {
    type Item = TurnEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        self.receiver.poll_recv(cx)
    }
}

impl TurnStream {
    pub(super) fn new(receiver: mpsc::Receiver<TurnEvent>) -> Self {
        TurnStream { receiver }
    }

    /// The next event, or `None` after [`TurnEvent::Finished`].
    pub async fn next(&mut self) -> Option<TurnEvent> {
        self.receiver.recv().await
    }
}
