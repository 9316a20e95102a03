//! Small helpers the engine needs without pulling in `futures`: an ordered concurrent join,
//! ids, catching panics in closures and futures, and boxing a future in place.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind as catch_sync};
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

/// A boxed, sendable future (what async hooks and dynamic tools return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// `Box::pin(make())` with the future made in its box. `Box::pin(future)` makes the future on
/// the stack and then copies it into the box, its whole size (2.7 KB for a step's answer),
/// though a future not yet polled holds only its arguments (`whole_turn_agent` in
/// agent-providers/benches/stream.rs). Made in place when `make` calls a function that returns
/// the future (an async fn's call), straight into the box; an async block written in `make`
/// itself is still copied.
#[inline(always)]
pub(crate) fn boxed<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

/// A value ready now, or a boxed future of it: what a call that mostly finishes on the spot
/// returns, so that its callers' futures hold and poll no state machine of its for the common
/// case (`Turn::insert_tracked`).
pub(crate) enum NowOr<'a, T> {
    /// Ready.
    Now(std::future::Ready<T>),
    /// To await.
    Later(BoxFuture<'a, T>),
}

impl<T> Future for NowOr<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.get_mut() {
            NowOr::Now(ready) => Pin::new(ready).poll(cx),
            NowOr::Later(future) => future.as_mut().poll(cx),
        }
    }
}

/// Runs futures concurrently, at most `limit` at a time, and returns their outputs in the order
/// given (not the order they finish).
pub(crate) fn join_ordered<'a, T>(
    futures: Vec<BoxFuture<'a, T>>,
    limit: usize,
) -> JoinOrdered<'a, T> {
    let total = futures.len();
    JoinOrdered {
        pending: futures.into_iter().map(Some).collect(),
        results: (0..total).map(|_| None).collect(),
        next: 0,
        running: Vec::new(),
        limit: limit.max(1),
    }
}

pub(crate) struct JoinOrdered<'a, T> {
    pending: Vec<Option<BoxFuture<'a, T>>>,
    results: Vec<Option<T>>,
    next: usize,
    running: Vec<(usize, BoxFuture<'a, T>)>,
    limit: usize,
}

impl<T> Unpin for JoinOrdered<'_, T> {}

impl<T> Future for JoinOrdered<'_, T> {
    type Output = Vec<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Vec<T>> {
        let this = &mut *self;
        loop {
            while this.running.len() < this.limit && this.next < this.pending.len() {
                if let Some(future) = this.pending[this.next].take() {
                    this.running.push((this.next, future));
                }
                this.next += 1;
            }
            let mut finished_any = false;
            let mut index = 0;
            while index < this.running.len() {
                let (slot, future) = &mut this.running[index];
                if let Poll::Ready(value) = future.as_mut().poll(cx) {
                    this.results[*slot] = Some(value);
                    // `remove`, not `swap_remove`: the calls still running keep the model's
                    // order, so they are polled (and their hooks fire) in that order.
                    drop(this.running.remove(index));
                    finished_any = true;
                } else {
                    index += 1;
                }
            }
            if this.running.is_empty() && this.next >= this.pending.len() {
                // Collected in place (an `Option<T>` the size of `T` reuses the vector): no
                // second vector grown result by result (`whole_turn_calls_agent` in
                // agent-providers/benches/stream.rs).
                let results = std::mem::take(&mut this.results);
                return Poll::Ready(results.into_iter().flatten().collect());
            }
            if !finished_any || this.next >= this.pending.len() {
                return Poll::Pending;
            }
        }
    }
}

/// A unique id with a prefix, such as `req_18c2f0a91b3e_5f3a9c0e17b2d846`: the time in
/// microseconds, then a count that starts, in each process, at a number drawn at random. The
/// count keeps the ids of one process apart; the random start those of processes that make
/// one in the same microsecond (two processes on one store started together would otherwise
/// both count from 0, and share their first conversation's session).
pub(crate) fn new_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_add(process_start());
    // Microseconds fit a `u64` for half a million years.
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    // Written digit by digit, not with `format!`: the formatting machinery was about 1,750
    // instructions per id, two ids a turn (`whole_turn_agent` in
    // agent-providers/benches/stream.rs). As bytes, checked as text once at the end: pushing
    // each digit as a `char` encoded it, about 25 instructions a digit.
    let mut id = Vec::with_capacity(prefix.len() + 2 + 16 + 16);
    id.extend_from_slice(prefix.as_bytes());
    id.push(b'_');
    push_hex(&mut id, micros);
    id.push(b'_');
    push_hex(&mut id, count);
    String::from_utf8(id).unwrap_or_default()
}

/// Where this process's id count starts: drawn once, from the operating system's randomness
/// that seeds std's `RandomState`, mixed with the process id.
fn process_start() -> u64 {
    static START: OnceLock<u64> = OnceLock::new();
    *START.get_or_init(|| {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.finish()
    })
}

/// Appends `n` in lowercase hexadecimal, most significant digit first.
fn push_hex(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 16];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b"0123456789abcdef"[(n % 16) as usize];
        n /= 16;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Wraps a pinned future (boxed, or pinned on the stack with `std::pin::pin!`) so a panic while
/// polling it becomes an `Err` with the panic message.
pub(crate) fn catch_unwind<F: Future + Unpin>(future: F) -> CatchUnwind<F> {
    CatchUnwind { future }
}

pub(crate) struct CatchUnwind<F> {
    future: F,
}

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.future;
        match catch_sync(AssertUnwindSafe(|| Pin::new(&mut *future).poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(&*payload))),
        }
    }
}

/// Runs `body`, turning a panic into an `Err` with the panic message.
// Inlined: a sync hook runs through it on each streamed chunk, and the call (with its result
// moved through) cost about 5 instructions more per chunk (`agent-providers/benches/chunks.rs`).
#[inline]
pub(crate) fn catch_panic<T>(body: impl FnOnce() -> T) -> Result<T, String> {
    catch_sync(AssertUnwindSafe(body)).map_err(|payload| panic_message(&*payload))
}

/// The message a panic's payload carries.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// The most of an outside text (a model's arguments or tool name) an error message quotes.
pub(crate) const QUOTE_LIMIT: usize = 4096;

/// `text` cut to [`QUOTE_LIMIT`] bytes at a character boundary, saying how long it was.
pub(crate) fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= QUOTE_LIMIT {
        return text.into();
    }
    let mut end = QUOTE_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len()).into()
}

#[cfg(test)]
mod clip_tests {
    use super::*;

    #[test]
    fn clips_at_a_character_boundary_and_says_the_length() {
        assert_eq!(clip("short"), "short");
        // Three-byte characters: the limit falls inside one.
        let long = "€".repeat(QUOTE_LIMIT);
        let clipped = clip(&long);
        let kept = QUOTE_LIMIT / 3 * 3;
        assert_eq!(
            clipped,
            format!("{}… ({} bytes in all)", &long[..kept], long.len())
        );
    }
}

#[cfg(test)]
mod id_tests {
    use super::*;

    #[test]
    fn hex_digits_read_back_as_the_number() {
        for n in [0, 1, 9, 10, 15, 16, 255, 1_700_000_000_123_456, u64::MAX] {
            let mut hex = Vec::new();
            push_hex(&mut hex, n);
            assert_eq!(hex, format!("{n:x}").into_bytes());
        }
    }

    #[test]
    fn ids_are_the_prefix_the_time_in_hex_and_a_count_in_hex() {
        let (a, b) = (new_id("req"), new_id("req"));
        assert_ne!(a, b);
        let count = |id: &str| {
            let parts: Vec<&str> = id.split('_').collect();
            assert_eq!(parts.len(), 3, "{id}");
            assert_eq!(parts[0], "req");
            assert!(
                u64::from_str_radix(parts[1], 16).is_ok_and(|micros| micros > 0),
                "{id}"
            );
            u64::from_str_radix(parts[2], 16).unwrap_or_else(|_| panic!("{id}"))
        };
        // One process counts on from its random start (this test may share it with others).
        assert!(count(&b).wrapping_sub(count(&a)) >= 1, "{a} {b}");
    }
}

#[cfg(test)]
mod join_tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    /// Outputs come in the order given, whatever order the futures finish in; at most `limit`
    /// run at once; the ones still running are polled in the order given.
    #[tokio::test(start_paused = true)]
    async fn outputs_keep_the_given_order_and_at_most_limit_run() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(Mutex::new((0usize, 0usize)));
        let delays = [30u64, 10, 20, 0, 50, 5];
        let futures: Vec<BoxFuture<'_, usize>> = delays
            .iter()
            .enumerate()
            .map(|(i, &ms)| {
                let (log, running) = (log.clone(), running.clone());
                Box::pin(async move {
                    {
                        let mut now = running.lock().unwrap();
                        now.0 += 1;
                        now.1 = now.1.max(now.0);
                    }
                    log.lock().unwrap().push(format!("start {i}"));
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    log.lock().unwrap().push(format!("end {i}"));
                    running.lock().unwrap().0 -= 1;
                    i
                }) as BoxFuture<'_, usize>
            })
            .collect();
        let outputs = join_ordered(futures, 3).await;
        assert_eq!(outputs, [0, 1, 2, 3, 4, 5]);
        assert_eq!(running.lock().unwrap().1, 3);
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log,
            [
                "start 0", "start 1", "start 2", "end 1", "start 3", "end 3", "start 4", "end 2",
                "start 5", "end 5", "end 0", "end 4",
            ]
        );
    }
}
