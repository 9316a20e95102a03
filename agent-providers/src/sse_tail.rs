//! The end of an SSE body. An event is dispatched at the blank line that follows it, but real
//! servers (Anthropic's OpenAI-compatible endpoint among them) close the connection right after
//! the last event's final line, `data: [DONE]\n`, without that blank line. [`CompleteLastEvent`]
//! watches the line structure of the bytes going by and, when the body ends after a complete
//! line of a pending event, adds the missing line end so the event is dispatched. A body that
//! stops inside a line is left as it is: that event is cut, and the stream stays truncated.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

/// A byte stream that completes its last SSE event at the end of the body (see the module).
pub(crate) struct CompleteLastEvent<S> {
    inner: S,
    /// Some line of an event arrived since the last blank line.
    pending: bool,
    /// Bytes of the current line so far (0 right after a line end).
    line: usize,
    /// The last byte was `\r` (a `\n` right after it belongs to the same line end).
    after_cr: bool,
    done: bool,
}

impl<S> CompleteLastEvent<S> {
    pub(crate) fn new(inner: S) -> Self {
        CompleteLastEvent {
            inner,
            pending: false,
            line: 0,
            after_cr: false,
            done: false,
        }
    }

    fn observe(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    // A line end: an empty line dispatches the pending event.
                    self.pending = self.line > 0;
                    self.line = 0;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.line += 1;
                    self.after_cr = false;
                }
            }
        }
    }
}

impl<S, B, E> Stream for CompleteLastEvent<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]> + From<&'static [u8]>,
{
    type Item = Result<B, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                self.observe(bytes.as_ref());
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(None) => {
                self.done = true;
                if self.pending && self.line == 0 {
                    Poll::Ready(Some(Ok(B::from(&b"\n"[..]))))
                } else {
                    Poll::Ready(None)
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the wrapper adds at the end of a body sent as these pieces.
    fn added(pieces: &[&'static str]) -> String {
        struct Pieces(Vec<&'static [u8]>);
        impl Stream for Pieces {
            type Item = Result<&'static [u8], ()>;
            fn poll_next(
                mut self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<Option<Self::Item>> {
                Poll::Ready((!self.0.is_empty()).then(|| Ok(self.0.remove(0))))
            }
        }
        let mut stream =
            CompleteLastEvent::new(Pieces(pieces.iter().map(|p| p.as_bytes()).collect()));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut all = String::new();
        while let Poll::Ready(Some(Ok(bytes))) = Pin::new(&mut stream).poll_next(&mut cx) {
            all.push_str(std::str::from_utf8(bytes).unwrap());
        }
        let sent: String = pieces.concat();
        all[sent.len()..].to_owned()
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_completed() {
        assert_eq!(added(&["data: {}\n\n", "data: [DONE]\n"]), "\n");
        assert_eq!(added(&["data: [DO", "NE]\r\n"]), "\n");
        assert_eq!(added(&["event: message_stop\ndata: {}\n"]), "\n");
    }

    #[test]
    fn a_finished_body_or_a_cut_line_is_left_alone() {
        assert_eq!(added(&["data: [DONE]\n\n"]), "");
        assert_eq!(added(&["data: [DONE]\r\n\r\n"]), "");
        assert_eq!(added(&["data: [DONE]\r\r"]), "");
        assert_eq!(added(&["data: [DO"]), "");
        assert_eq!(added(&["data: {}\n\ndata: [DONE]"]), "");
        assert_eq!(added(&[]), "");
    }
}
