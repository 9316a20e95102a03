//! Streaming tools: the preliminary results a running tool reports, either one at a time
//! ([`tool_progress`]) or as the items of the [`ToolStream`] it returns. Both go the one way:
//! through the reporter the engine sets for the call being polled, which turns each into a
//! `Chunk::ToolPreliminary`.

use std::collections::VecDeque;
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use futures_core::Stream;
use serde::Serialize;
use serde_json::Value;

use super::ToolError;

/// Where the preliminary results of one call go: set by the engine around the call's future.
/// A struct, not a closure: making it allocates nothing (a closure behind an `Arc` cost one
/// allocation per tool call, streaming or not).
pub(crate) struct Report {
    /// The call's id and tool name.
    pub(crate) id: Arc<str>,
    pub(crate) name: Arc<str>,
    /// The call's position in its step.
    pub(crate) position: usize,
    /// The step's queue, shared by its calls.
    pub(crate) sink: Arc<Reported>,
}

/// The preliminary results of one step's calls, in the order they were reported: the calls'
/// reporters push, the step takes them. A lock and a waker, not a tokio channel: a step with
/// tool calls made a channel (two allocations, one a block of 32 slots, and about 3,500
/// instructions a turn) whether or not any tool reported (`whole_turn_agent` in
/// agent-providers/benches/stream.rs). It counts each call's results too, instead of a
/// counter allocated per call. Results pushed after the step stopped reading are dropped with
/// the last reporter.
#[derive(Default)]
pub(crate) struct Reported {
    inner: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    results: VecDeque<Preliminary>,
    /// The step's task, waiting for a result.
    waker: Option<Waker>,
    /// How many results each call reported, by position (grown by the first report).
    counts: Vec<usize>,
}

impl Reported {
    /// Adds a result of the call at `position` and wakes the step if it waits for one.
    fn push(&self, position: usize, preliminary: Preliminary) {
        let waker = {
            let mut queue = self.queue();
            if queue.counts.len() <= position {
                queue.counts.resize(position + 1, 0);
            }
            queue.counts[position] += 1;
            queue.results.push_back(preliminary);
            queue.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The next result, or `Pending` with the step's task woken by the next push.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Preliminary> {
        let mut queue = self.queue();
        if let Some(preliminary) = queue.results.pop_front() {
            return Poll::Ready(preliminary);
        }
        match &mut queue.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            waiting => *waiting = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// How many results the call at `position` reported.
    pub(crate) fn count(&self, position: usize) -> usize {
        self.queue().counts.get(position).copied().unwrap_or(0)
    }

    /// The next result, if one is there.
    pub(crate) fn take(&self) -> Option<Preliminary> {
        self.queue().results.pop_front()
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        // Never held across user code: a poisoned lock still holds a valid queue.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One preliminary result, with the call that reported it.
pub(crate) struct Preliminary {
    pub(crate) id: Arc<str>,
    pub(crate) name: Arc<str>,
    pub(crate) content: Value,
}

tokio::task_local! {
    /// The reporter of the tool call whose future is being polled.
    static REPORT: Report;
}

/// Runs `future` (a tool's) so that preliminary results reported inside it go to `report`.
/// (A plain function: an `async fn` would keep `future` twice, as its argument and awaited.)
pub(crate) fn reporting<F: Future>(report: Report, future: F) -> impl Future<Output = F::Output> {
    REPORT.scope(report, future)
}

/// Runs `call` (a tool's, on the spot) so that preliminary results reported inside it go to
/// `report`.
pub(crate) fn reporting_now<T>(report: Report, call: impl FnOnce() -> T) -> T {
    REPORT.sync_scope(report, call)
}

/// Sends `content` to the reporter of the call running; `false` outside a tool call.
fn report(content: Value) -> bool {
    REPORT
        .try_with(|report| {
            let preliminary = Preliminary {
                id: report.id.clone(),
                name: report.name.clone(),
                content,
            };
            report.sink.push(report.position, preliminary);
        })
        .is_ok()
}

/// Reports a preliminary result of the tool call running: on_chunk and the stream API receive
/// it (as `Chunk::ToolPreliminary`) while the tool goes on; the model reads only the tool's
/// final value. Returns `false` outside a tool call (or when the value does not serialize).
///
/// ```
/// use agent_core::{FnTool, tool_progress};
/// let index = FnTool::new("index", "Indexes the files.", serde_json::json!({"type": "object"}),
///     |_, _| async {
///         for done in [25, 50, 75] {
///             tool_progress(serde_json::json!({ "percent": done }));
///         }
///         Ok(serde_json::json!("indexed 120 files"))
///     });
/// # let _ = index;
/// ```
pub fn tool_progress(value: impl Serialize) -> bool {
    serde_json::to_value(value).is_ok_and(report)
}

/// One item of a [`ToolStream`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolUpdate<P, T> {
    /// A preliminary result: on_chunk and the stream API receive it; the model does not.
    Progress(P),
    /// The final value, which the model reads. The stream is dropped here: whatever it would
    /// yield after this is never polled for.
    Done(T),
    /// The call failed: the model reads the message as an error result. The stream is dropped
    /// here, as after [`Done`](Self::Done).
    Failed(ToolError),
}

/// What a streaming tool returns: a stream of [`ToolUpdate`]s, preliminary results of type `P`
/// then one final value of type `T` (the tool's `Output`).
///
/// The stream is polled only once the call runs, so a call that `before_tool_call` blocks or
/// substitutes polls nothing. A stream that ends without a final value is an error result
/// naming the tool; a cancel or the tool's timeout drops the stream where it waits.
///
/// ```
/// use agent_core::{ToolStream, ToolUpdate, tool};
///
/// /// Indexes the files, reporting how far it got.
/// #[tool]
/// fn index() -> ToolStream<u32, String> {
///     ToolStream::new(async_stream::stream! {
///         for percent in [25, 50, 75] {
///             yield ToolUpdate::Progress(percent);
///         }
///         yield ToolUpdate::Done("indexed 120 files".to_owned());
///     })
/// }
/// ```
pub struct ToolStream<P, T> {
    stream: Pin<Box<dyn Stream<Item = ToolUpdate<P, T>> + Send>>,
}

impl<P, T> ToolStream<P, T> {
    /// Wraps a stream of updates (an `async_stream::stream!` block, a channel's receiver
    /// stream, ...).
    pub fn new<S>(stream: S) -> Self
    where
        S: Stream<Item = ToolUpdate<P, T>> + Send + 'static,
    {
        ToolStream {
            stream: Box::pin(stream),
        }
    }

    /// Polls the stream to its final value, reporting each preliminary result of the call
    /// running (as [`tool_progress`] does). This is what a streaming tool's call does; a
    /// hand-written [`Tool`](super::Tool) returning a stream calls it with its name, which the
    /// error of a stream ending without a final value (or with a preliminary result that does
    /// not serialize) names.
    pub async fn finish(mut self, tool: &str) -> Result<T, ToolError>
    where
        P: Serialize,
    {
        loop {
            match poll_fn(|cx| self.stream.as_mut().poll_next(cx)).await {
                Some(ToolUpdate::Progress(progress)) => match serde_json::to_value(progress) {
                    Ok(content) => {
                        report(content);
                    }
                    Err(error) => {
                        return Err(ToolError::new(format!(
                            "tool `{tool}` reported a preliminary result that cannot be serialized: {error}"
                        )));
                    }
                },
                Some(ToolUpdate::Done(output)) => return Ok(output),
                Some(ToolUpdate::Failed(error)) => return Err(error),
                None => {
                    return Err(ToolError::new(format!(
                        "tool `{tool}` ended its stream without a final value"
                    )));
                }
            }
        }
    }
}

impl<P, T> fmt::Debug for ToolStream<P, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolStream").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value whose serialization fails.
    struct Unserializable;

    impl Serialize for Unserializable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no JSON for this"))
        }
    }

    #[tokio::test]
    async fn a_preliminary_result_that_does_not_serialize_is_an_error_naming_the_tool() {
        let stream = ToolStream::new(async_stream::stream! {
            yield ToolUpdate::Progress(Unserializable);
            yield ToolUpdate::Done(1);
        });
        let error = stream.finish("index").await.unwrap_err();
        assert_eq!(
            error.message(),
            "tool `index` reported a preliminary result that cannot be serialized: no JSON for this"
        );
    }

    /// A waker that counts its wakes.
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn the_step_queue_keeps_the_order_counts_each_call_and_wakes_a_waiting_step() {
        let queue = Arc::new(Reported::default());
        let wakes = Arc::new(Wakes(Default::default()));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(
            queue.poll_next(&mut cx).is_pending(),
            "nothing reported yet"
        );
        assert_eq!(queue.count(0), 0);
        // Reports `percent` as the call at `position` does, through the task-local reporter.
        let report_as = |position: usize, percent: u32| {
            let by = Report {
                id: Arc::from(format!("call_{position}")),
                name: Arc::from("index"),
                position,
                sink: queue.clone(),
            };
            REPORT.sync_scope(by, || report(serde_json::json!(percent)))
        };
        assert!(report_as(2, 10));
        assert_eq!(
            wakes.0.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "the waiting step is woken"
        );
        assert!(report_as(0, 50));
        assert!(report_as(2, 20));
        assert_eq!(
            wakes.0.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "no waiter registered since"
        );
        assert_eq!(
            (
                queue.count(0),
                queue.count(1),
                queue.count(2),
                queue.count(7)
            ),
            (1, 0, 2, 0)
        );
        let order: Vec<(String, Value)> = std::iter::from_fn(|| match queue.poll_next(&mut cx) {
            Poll::Ready(result) => Some((result.id.to_string(), result.content)),
            Poll::Pending => None,
        })
        .collect();
        assert_eq!(
            order,
            [
                ("call_2".to_owned(), serde_json::json!(10)),
                ("call_0".to_owned(), serde_json::json!(50)),
                ("call_2".to_owned(), serde_json::json!(20)),
            ]
        );
        assert!(queue.take().is_none());
        assert!(
            !report(serde_json::json!(1)),
            "outside a call nothing is reported"
        );
    }
}
