//! The one streaming loop every provider shares: send the request, read its SSE stream through
//! the provider's [`Decoder`], enforce the first-byte, idle and total timeouts, and retry
//! transient failures (connection errors, retryable statuses, and streams that break partway)
//! with backoff. A broken stream is retried as a whole step: the engine is told with
//! [`ModelEvent::Discard`] that the failed attempt's output is void, and since tools only run
//! once a stream ended cleanly, no tool runs twice or from a broken stream.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use agent_core::{
    ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelStream, is_context_overflow,
};
use futures_core::Stream;
use reqwest::header::{HeaderName, HeaderValue};
use tokio::time::Instant;

use crate::config::{ApiKey, ConfigError, HttpSettings};
use crate::retry::{backoff, retry_after, retryable};
use crate::sse::{NotUtf8, SseFrames};

/// One HTTP request a provider builds for a model call.
pub(crate) struct HttpRequest {
    pub(crate) url: reqwest::Url,
    /// Headers other than the API key's (fixed per provider: written without an allocation).
    pub(crate) headers: &'static [(&'static str, &'static str)],
    /// The API key's header, if any.
    pub(crate) auth: Option<Arc<AuthHeader>>,
    /// Shared, not copied, by every attempt (a copy of the whole request per attempt, the
    /// history included: `whole_turn_history_agent` in benches/stream.rs).
    pub(crate) body: bytes::Bytes,
}

/// An API key's request header, made once per client rather than on every request (a
/// `format!`, a check of each byte and a copy per request, about 1,000 instructions:
/// `whole_turn_agent` in benches/stream.rs).
pub(crate) struct AuthHeader {
    name: HeaderName,
    /// `None` when the key holds characters a header cannot: each request then fails.
    value: Option<HeaderValue>,
    key: ApiKey,
}

impl AuthHeader {
    /// The header `name: {prefix}{key}`, marked sensitive.
    pub(crate) fn new(name: &'static str, prefix: &str, key: ApiKey) -> Self {
        let value = HeaderValue::from_str(&format!("{prefix}{}", key.expose()))
            .ok()
            .map(|mut value| {
                value.set_sensitive(true);
                value
            });
        AuthHeader {
            name: HeaderName::from_static(name),
            value,
            key,
        }
    }

    /// The key.
    pub(crate) fn key(&self) -> &ApiKey {
        &self.key
    }

    /// Why a key read from the environment variable `var` cannot be sent, if it cannot (a
    /// trailing `\r` from a file written on Windows, say); the key itself is not shown.
    pub(crate) fn unsendable(&self, var: &str) -> Option<ConfigError> {
        self.value.is_none().then(|| {
            ConfigError(format!(
                "{var} holds a character an HTTP header cannot carry (a line break, say): check \
                 its value"
            ))
        })
    }
}

/// `base` with `path` added to its path: before its query, when it has one (an Azure OpenAI
/// or gateway base URL that carries `?api-version=...`), so the path does not end up inside
/// the query; trailing slashes of the base's path do not matter.
pub(crate) fn joined(base: &str, path: &str) -> String {
    let (head, query) = split_query(base);
    format!("{}{path}{query}", head.trim_end_matches('/'))
}

/// A URL's part before its query, and the query from its `?` (empty when it has none).
pub(crate) fn split_query(url: &str) -> (&str, &str) {
    url.split_at(url.find('?').unwrap_or(url.len()))
}

/// A provider's endpoint, parsed once when the client is configured rather than by reqwest on
/// every request (a URL parse per model call, about 0.7 µs: `whole_turn_agent` in
/// benches/stream.rs).
#[derive(Clone)]
pub(crate) struct Endpoint {
    text: String,
    parsed: Result<reqwest::Url, String>,
}

impl Endpoint {
    pub(crate) fn new(text: String) -> Self {
        let parsed = match reqwest::Url::parse(&text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(url),
            Ok(url) => Err(format!(
                "its scheme `{}` is not http or https",
                url.scheme()
            )),
            Err(error) => Err(error.to_string()),
        };
        Endpoint { text, parsed }
    }

    /// Why the URL cannot be sent to, if it cannot: for a client configured from the
    /// environment to refuse it at once.
    pub(crate) fn invalid(&self) -> Option<&str> {
        self.parsed.as_ref().err().map(String::as_str)
    }

    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The URL to send to; one that does not parse (or is not http or https) fails the call as
    /// a bad request, which is not retried: sending it again cannot succeed.
    pub(crate) fn url(&self, provider: &str) -> Result<reqwest::Url, ModelError> {
        self.parsed.clone().map_err(|error| {
            ModelError::new(
                ModelErrorKind::BadRequest,
                format!(
                    "{provider}: request failed: invalid URL `{}`: {error}; give the client an \
                     http or https base URL",
                    self.text
                ),
            )
        })
    }
}

/// A provider's stream format: turns SSE events into model events.
pub(crate) trait Decoder: Send + Unpin + 'static {
    /// Feeds one SSE event (its `event:` name, if any, and its `data:`). Pushes the model events
    /// it completes. An event that cannot be parsed is [`ModelErrorKind::StreamMalformed`]; an
    /// error the provider reports in the stream is returned with the kind it deserves (so an
    /// overload is retried and a context overflow is not).
    fn decode(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError>;

    /// Whether the provider's end marker was seen (its last event pushed [`ModelEvent::Finish`]).
    fn finished(&self) -> bool;
}

/// A provider's wire format: how a model request becomes an HTTP request, and how its stream
/// is decoded.
pub(crate) trait Wire: Send + Sync + 'static {
    /// The stream decoder.
    type Decoder: Decoder;

    /// The provider's name, for error messages (`openai`).
    fn name(&self) -> &'static str;

    /// The model asked for when a request names none.
    fn model(&self) -> &str;

    /// Builds the HTTP request, writing its body into `body` (empty, with room for about as
    /// much as the client's last request). A bad request, such as a schema strict mode cannot
    /// express, is [`ModelErrorKind::BadRequest`].
    fn request(&self, request: &ModelRequest, body: Vec<u8>) -> Result<HttpRequest, ModelError>;

    /// A fresh decoder for one attempt.
    fn decoder(&self) -> Self::Decoder;
}

/// The HTTP client and its settings, shared by a provider's calls.
#[derive(Debug)]
pub(crate) struct Transport {
    client: reqwest::Client,
    pub(crate) settings: HttpSettings,
    /// The size of the last request body built for this client. The next body starts with
    /// room for it: written into a buffer that started at 128 bytes, a body of a long
    /// conversation grew about ten times, each growth a copy (`whole_turn_history_agent` in
    /// benches/stream.rs).
    body_size: AtomicUsize,
    /// The buffer of a finished call's body, taken back for the next call's. A body freshly
    /// allocated each step grew the heap at its top and glibc gave it back when the body was
    /// freed (past its trim threshold): a conversation of 1,000 messages paid about 20
    /// page faults a turn for it, and wrote its bodies into memory no cache held
    /// (`whole_turn_conversation_agent` in benches/stream.rs). One buffer per client.
    spare: Mutex<Vec<u8>>,
}

/// The largest body buffer a client keeps between calls (1 MiB): past it a buffer is freed
/// with its call, so one very long request does not hold its memory for good.
const SPARE_LIMIT: usize = 1 << 20;

impl Transport {
    pub(crate) fn new(settings: HttpSettings) -> Result<Self, ConfigError> {
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .redirect(redirect_policy())
            .build()
            .map_err(|error| ConfigError(format!("cannot build the HTTP client: {error}")))?;
        Ok(Transport {
            client,
            settings,
            body_size: AtomicUsize::new(0),
            spare: Mutex::new(Vec::new()),
        })
    }

    /// An empty buffer for a body with room for `room` bytes: the spare one if there is one.
    fn buffer(&self, room: usize) -> Vec<u8> {
        let mut buffer =
            std::mem::take(&mut *self.spare.lock().unwrap_or_else(PoisonError::into_inner));
        buffer.reserve(room);
        buffer
    }

    /// Keeps `body`'s buffer, emptied, for the next call: when nothing else holds it, it is
    /// at most [`SPARE_LIMIT`] and larger than the buffer kept, if any.
    fn recycle(&self, body: bytes::Bytes) {
        let Ok(body) = body.try_into_mut() else {
            return;
        };
        let mut buffer = Vec::from(body);
        if buffer.capacity() > SPARE_LIMIT {
            return;
        }
        buffer.clear();
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.capacity() < buffer.capacity() {
            *spare = buffer;
        }
    }
}

/// Redirects are followed (at most 10, as reqwest's default policy does) only while they stay on
/// the endpoint's origin (scheme, host and port). One to another origin would carry the
/// conversation there, and the API key too when it is not in `authorization` (Anthropic's
/// `x-api-key`, which reqwest keeps on a redirect to another host): it is returned instead,
/// and fails the call naming where it pointed.
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let endpoint = attempt.previous().first().map(reqwest::Url::origin);
        if endpoint.is_some_and(|origin| origin == attempt.url().origin()) {
            reqwest::redirect::Policy::default().redirect(attempt)
        } else {
            attempt.stop()
        }
    })
}

/// Streams one model call through `wire`, with timeouts and retries.
pub(crate) fn stream<W: Wire>(
    transport: Arc<Transport>,
    wire: Arc<W>,
    request: ModelRequest,
) -> ModelStream {
    // Room for the last body and an eighth more: a conversation's next request is a little
    // longer than its last.
    if let Err(error) = finite_settings(wire.name(), &request)
        .and_then(|()| named_model(wire.name(), &request, wire.model()))
    {
        return failed(error);
    }
    let last = transport.body_size.load(Ordering::Relaxed);
    let buffer = transport.buffer(last + last / 8);
    let http = match wire.request(&request, buffer) {
        Ok(http) => http,
        Err(error) => return failed(error),
    };
    transport
        .body_size
        .store(http.body.len(), Ordering::Relaxed);
    let idle = request
        .stall_timeout
        .unwrap_or(transport.settings.idle_timeout);
    Box::pin(Call::new(
        transport,
        wire,
        http,
        (!idle.is_zero()).then_some(idle),
        reqwest::Response::bytes_stream,
    ))
}

/// A `temperature` or `top_p` that is not a finite number is a bad request: JSON has no NaN
/// nor infinity, and serde_json writes one as `null`, which a server reads as unset. A provider
/// option of that name replaces the setting, and is sent instead.
fn finite_settings(provider: &str, request: &ModelRequest) -> Result<(), ModelError> {
    let settings = &request.settings;
    for (name, value) in [
        ("temperature", settings.temperature),
        ("top_p", settings.top_p),
    ] {
        if let Some(value) = value.filter(|value| !value.is_finite())
            && !request.provider_options.contains_key(name)
        {
            return Err(ModelError::new(
                ModelErrorKind::BadRequest,
                format!("{provider}: the call's `{name}` is {value}: give a finite number"),
            ));
        }
    }
    Ok(())
}

/// A call that names no model, neither its own nor the client's (`model("")`, an empty
/// variable read into it), is a bad request: the server would refuse it with a message that
/// does not say where the model is set.
fn named_model(provider: &str, request: &ModelRequest, default: &str) -> Result<(), ModelError> {
    let model = if request.model.is_empty() {
        default
    } else {
        &request.model
    };
    if model.trim().is_empty() {
        return Err(ModelError::new(
            ModelErrorKind::BadRequest,
            format!(
                "{provider}: the call names no model (`{model}`): give the client one with \
                 `.model(...)`, or the call a non-empty `ModelRequest::model`"
            ),
        ));
    }
    Ok(())
}

/// A call that fails before sending anything: its error is its only item.
pub(crate) fn failed(error: ModelError) -> ModelStream {
    struct Failed(Option<ModelError>);

    impl Stream for Failed {
        type Item = Result<ModelEvent, ModelError>;

        fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Ready(self.get_mut().0.take().map(Err))
        }
    }

    Box::pin(Failed(Some(error)))
}

/// One model call's stream: a state machine rather than an `async` generator, so that each
/// event is handed out straight from the decoder's queue (a generator's yield moved every event
/// through its slot: about 250 instructions per streamed chunk, `openai_model` in
/// `benches/chunks.rs`). Sending and backing off are futures it polls; reading the response is
/// polled in place.
///
/// Generic over the response body's stream only because reqwest's type for it cannot be
/// named: boxing it instead would cost an allocation per attempt.
struct Call<W: Wire, B> {
    transport: Arc<Transport>,
    wire: Arc<W>,
    /// The request, for every attempt.
    http: HttpRequest,
    /// The idle timeout between reads (`None`: none).
    idle: Option<Duration>,
    /// How a response becomes the stream of its body's reads.
    body: fn(reqwest::Response) -> B,
    /// Retries made so far.
    attempt: u32,
    /// The first-byte and idle timer, kept for the whole call.
    timer: Timer,
    state: State<W::Decoder, B>,
}

/// Where a call is.
enum State<D, B> {
    /// Waiting out the backoff (on a retry), then sending the request and waiting for its
    /// response's headers.
    Sending(Pin<Box<dyn Future<Output = Result<Sent, ModelError>> + Send>>),
    /// Reading the response's event stream.
    Reading(Reading<D, B>),
    /// The stream ended.
    Done,
}

/// An attempt's response, and when the attempt must end by.
struct Sent {
    response: reqwest::Response,
    deadline: Option<Deadline>,
}

/// When an attempt must end by: its request's sending and its total timeout (see
/// [`HttpSettings::total_timeout`]).
#[derive(Clone, Copy)]
struct Deadline {
    at: Instant,
    total: Duration,
}

/// An attempt reading its response's event stream.
struct Reading<D, B> {
    body: B,
    frames: SseFrames,
    /// Whether the body ended.
    ended: bool,
    decoder: D,
    /// The events decoded and not handed out yet, last first (popped off the end).
    decoded: Vec<ModelEvent>,
    /// Whether this attempt handed out an event, which a failure then takes back.
    streamed: bool,
    /// The time the next read may take: the first-byte timeout, then the idle one.
    limit: Option<Duration>,
}

/// A failed attempt whose stream yields an item on its way to a retry or an end.
enum Failure {
    /// The call failed for good: its last item.
    Final(ModelError),
    /// A retry begins after the stream of this attempt broke partway: the engine is told the
    /// attempt's output is void.
    Discard(String),
    /// A retry begins; the attempt handed nothing out.
    Retry,
}

impl<W: Wire, B> Call<W, B>
where
    B: Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin + Send + 'static,
{
    fn new(
        transport: Arc<Transport>,
        wire: Arc<W>,
        http: HttpRequest,
        idle: Option<Duration>,
        body: fn(reqwest::Response) -> B,
    ) -> Self {
        let mut call = Call {
            transport,
            wire,
            http,
            idle,
            body,
            attempt: 0,
            timer: Timer::default(),
            state: State::Done,
        };
        call.state = call.send(None);
        call
    }

    /// An attempt: after `delay`, if any, the request sent and its response's headers.
    fn send(&self, delay: Option<Duration>) -> State<W::Decoder, B> {
        let provider = self.wire.name();
        let settings = &self.transport.settings;
        let limits = Limits {
            first_byte: settings.first_byte_timeout,
            total: Some(settings.total_timeout).filter(|total| !total.is_zero()),
        };
        let request = request(&self.transport.client, provider, &self.http);
        // A first attempt's future holds no sleep: the box each request's future is moved
        // into is that much smaller (`whole_turn_agent` in benches/stream.rs).
        State::Sending(match (request, delay) {
            (Err(error), _) => Box::pin(std::future::ready(Err(error))),
            (Ok(request), None) => Box::pin(send(request, provider, limits)),
            (Ok(request), Some(delay)) => Box::pin(async move {
                tokio::time::sleep(delay).await;
                send(request, provider, limits).await
            }),
        })
    }

    /// What follows a failed attempt: a retry, or the failure as the call's last item.
    fn fail(&mut self, failure: ModelError) -> Failure {
        let key = self.http.auth.as_deref().map(AuthHeader::key);
        // Redacted before the discard event carries its message to observers.
        let failure = redact(failure, key);
        let settings = &self.transport.settings;
        if self.attempt >= settings.max_retries || !retryable(&failure) {
            self.state = State::Done;
            return Failure::Final(failure);
        }
        // Only a stream that broke partway is discarded: an attempt that failed before its
        // response streamed anything has nothing to take back.
        let streamed = matches!(&self.state, State::Reading(reading) if reading.streamed);
        self.attempt += 1;
        let delay = backoff(settings, self.attempt, failure.retry_after);
        tracing::warn!(
            provider = self.wire.name(),
            attempt = self.attempt,
            delay_ms = delay.as_millis() as u64,
            "retrying a failed model call: {failure}"
        );
        self.state = self.send(Some(delay));
        if streamed {
            Failure::Discard(failure.message)
        } else {
            Failure::Retry
        }
    }
}

impl<D: Decoder, B> Reading<D, B>
where
    B: Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
{
    /// The attempt's next event; `None` once the decoder saw the end marker, `Err` when the
    /// attempt failed.
    fn poll_event(
        &mut self,
        cx: &mut Context<'_>,
        timer: &mut Timer,
        idle: Option<Duration>,
        provider: &str,
    ) -> Poll<Result<Option<ModelEvent>, ModelError>> {
        loop {
            if let Some(event) = self.decoded.pop() {
                self.streamed = true;
                return Poll::Ready(Ok(Some(event)));
            }
            if self.decoder.finished() {
                return Poll::Ready(Ok(None));
            }
            // Every event the bytes so far complete is decoded before more are read.
            match self.frames.next_event() {
                Some(Ok(event)) => {
                    self.decoder
                        .decode(event.name, event.data, &mut self.decoded)?;
                    self.decoded.reverse();
                    continue;
                }
                Some(Err(NotUtf8)) => return Poll::Ready(Err(not_utf8(provider))),
                None if self.ended => return Poll::Ready(Err(truncated(provider))),
                None => {}
            }
            // Checked once per read, never per event.
            let pending = self.frames.pending();
            if pending > EVENT_LIMIT {
                return Poll::Ready(Err(too_long(provider, pending)));
            }
            let Some(next) = ready!(timer.poll_next(cx, &mut self.body, self.limit)) else {
                return Poll::Ready(Err(timer.expired(provider, self.limit)));
            };
            self.limit = idle;
            match next {
                None => {
                    self.frames.end();
                    self.ended = true;
                }
                Some(Err(error)) => return Poll::Ready(Err(broken(provider, &error))),
                Some(Ok(bytes)) => self.frames.push(bytes),
            }
        }
    }
}

/// A finished call's body buffer goes back to its client for the next call's body.
impl<W: Wire, B> Drop for Call<W, B> {
    fn drop(&mut self) {
        self.transport.recycle(std::mem::take(&mut self.http.body));
    }
}

impl<W: Wire, B> Stream for Call<W, B>
where
    B: Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin + Send + 'static,
{
    type Item = Result<ModelEvent, ModelError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let call = self.get_mut();
        loop {
            let failure = match &mut call.state {
                State::Reading(reading) => {
                    let provider = call.wire.name();
                    match ready!(reading.poll_event(cx, &mut call.timer, call.idle, provider)) {
                        Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                        Ok(None) => {
                            call.state = State::Done;
                            return Poll::Ready(None);
                        }
                        Err(failure) => failure,
                    }
                }
                State::Sending(send) => match ready!(send.as_mut().poll(cx)) {
                    Ok(Sent { response, deadline }) => {
                        call.timer.deadline = deadline;
                        call.state = State::Reading(Reading {
                            body: (call.body)(response),
                            frames: SseFrames::default(),
                            ended: false,
                            decoder: call.wire.decoder(),
                            decoded: Vec::new(),
                            streamed: false,
                            limit: Some(call.transport.settings.first_byte_timeout),
                        });
                        continue;
                    }
                    Err(failure) => failure,
                },
                State::Done => return Poll::Ready(None),
            };
            match call.fail(failure) {
                Failure::Final(failure) => return Poll::Ready(Some(Err(failure))),
                Failure::Discard(reason) => {
                    return Poll::Ready(Some(Ok(ModelEvent::Discard { reason })));
                }
                Failure::Retry => {}
            }
        }
    }
}

/// The HTTP request of one attempt; an API key a header cannot hold fails it.
fn request(
    client: &reqwest::Client,
    provider: &str,
    http: &HttpRequest,
) -> Result<reqwest::RequestBuilder, ModelError> {
    let mut builder = client.post(http.url.clone()).body(http.body.clone());
    for &(name, value) in http.headers {
        builder = builder.header(name, HeaderValue::from_static(value));
    }
    if let Some(auth) = &http.auth {
        let value = auth.value.clone().ok_or_else(|| {
            ModelError::new(
                ModelErrorKind::Authentication,
                format!("{provider}: the API key holds characters a header cannot"),
            )
        })?;
        builder = builder.header(auth.name.clone(), value);
    }
    Ok(builder)
}

/// The timeouts an attempt's sending keeps.
#[derive(Clone, Copy)]
struct Limits {
    first_byte: Duration,
    /// The attempt's total timeout (`None`: none).
    total: Option<Duration>,
}

/// Sends the request and waits for the response headers, within the first-byte timeout and the
/// attempt's total timeout, which starts here; a non-success status is an error carrying the
/// provider's body.
async fn send(
    builder: reqwest::RequestBuilder,
    provider: &str,
    limits: Limits,
) -> Result<Sent, ModelError> {
    let limit = limits.first_byte;
    let start = Instant::now();
    // A timeout past what an instant can hold (`Duration::MAX`) is none.
    let deadline = limits.total.and_then(|total| {
        let at = start.checked_add(total)?;
        Some(Deadline { at, total })
    });
    let headers_by = start.checked_add(limit);
    let by = match (headers_by, deadline.map(|deadline| deadline.at)) {
        (Some(headers_by), Some(deadline)) => Some(headers_by.min(deadline)),
        (headers_by, deadline) => headers_by.or(deadline),
    };
    let sent = match by {
        Some(by) => tokio::time::timeout_at(by, builder.send()).await,
        None => Ok(builder.send().await),
    };
    let response = match sent {
        Err(_) => {
            return Err(match deadline {
                Some(Deadline { at, total }) if Some(at) == by => overran(provider, total),
                _ => stalled(provider, limit),
            });
        }
        Ok(Err(error)) => {
            let kind = if error.is_timeout() {
                ModelErrorKind::Timeout
            } else {
                ModelErrorKind::Transport
            };
            return Err(ModelError::new(
                kind,
                format!("{provider}: request failed: {}", error_chain(&error)),
            ));
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        fn content_type(response: &reqwest::Response) -> &str {
            let value = response.headers().get(reqwest::header::CONTENT_TYPE);
            value
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
        }
        // Read in place: only an error message needs the header as a `String`.
        if is_event_stream(content_type(&response)) {
            return Ok(Sent { response, deadline });
        }
        let content_type = content_type(&response).to_owned();
        // A success that is not a stream (a proxy's page, a corrupt reply): malformed, and
        // worth another try. A JSON body is most likely an error some proxies send with 200:
        // kept as an error body is, and a context overflow in it is one (not tried again with
        // the same too long history).
        let json = content_type.starts_with("application/json");
        let keep = if json { ERROR_BODY_LIMIT } else { 200 };
        let body = read_capped(response.bytes_stream(), body_by(limit, deadline), keep).await;
        let shown = body.trim_end();
        let kind = if json && is_context_overflow(shown) {
            ModelErrorKind::ContextOverflow
        } else {
            ModelErrorKind::StreamMalformed
        };
        return Err(ModelError::new(
            kind,
            format!("{provider}: expected an event stream, got `{content_type}`: {shown}"),
        )
        .with_status(status.as_u16()));
    }
    let delay = retry_after(response.headers());
    // A 404 may be a base URL that misses its path (Ollama's `/v1`): where the request went.
    let sent_to = (status == reqwest::StatusCode::NOT_FOUND).then(|| shown_url(response.url()));
    // A redirect the policy did not follow (see `redirect_policy`): where it pointed.
    let location = status
        .is_redirection()
        .then(|| response.headers().get(reqwest::header::LOCATION))
        .flatten()
        .map(|location| String::from_utf8_lossy(location.as_bytes()).into_owned());
    let by = body_by(limit, deadline);
    let body = read_capped(response.bytes_stream(), by, ERROR_BODY_LIMIT).await;
    let mut error = status_error(
        provider,
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        &body,
    )
    .with_retry_after(delay);
    if let Some(location) = location {
        error.message.push_str(&format!(
            " (a redirect to `{location}`, not followed: it leaves the endpoint's server, and \
             would take the request and its API key there; if that server is the one meant, \
             give the client its URL as the base URL)"
        ));
    }
    if let Some(url) = sent_to {
        error.message.push_str(&format!(" (sent to `{url}`)"));
    }
    Err(error)
}

/// A URL as an error shows it: without its query, fragment and credentials, which may carry
/// a key.
fn shown_url(url: &reqwest::Url) -> reqwest::Url {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    // Only a URL that cannot have a host refuses these, and a request URL has one.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown
}

/// How much of an error response's body is kept (in bytes, cut at a character boundary): enough
/// for any provider's error JSON; the rest is never read nor buffered.
pub(crate) const ERROR_BODY_LIMIT: usize = 8 * 1024;

/// When the body of a response that is not a stream must have come by: `limit` (the first-byte
/// timeout) after its head, and no later than the attempt's total timeout (`None`: never).
fn body_by(limit: Duration, deadline: Option<Deadline>) -> Option<Instant> {
    let by = Instant::now().checked_add(limit);
    match (by, deadline) {
        (Some(by), Some(deadline)) => Some(by.min(deadline.at)),
        (by, deadline) => by.or(deadline.map(|deadline| deadline.at)),
    }
}

/// Reads at most `cap` bytes of a response body until `by`, then stops reading (the
/// connection is dropped with the response); a body cut, at the cap or at `by`, ends with
/// `… [truncated]`. Boxed: only a failed request reads a body, and this future's 500 bytes
/// would otherwise size every request's (`whole_turn_agent` in benches/stream.rs).
fn read_capped<S>(
    mut body: S,
    by: Option<Instant>,
    cap: usize,
) -> agent_core::BoxFuture<'static, String>
where
    S: Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin + Send + 'static,
{
    Box::pin(async move {
        let mut kept = Vec::new();
        let read = async {
            while let Some(Ok(chunk)) =
                std::future::poll_fn(|cx| Pin::new(&mut body).poll_next(cx)).await
            {
                let room = cap - kept.len();
                if chunk.len() > room {
                    kept.extend_from_slice(&chunk[..room]);
                    return true;
                }
                kept.extend_from_slice(&chunk);
            }
            false
        };
        // A body that stops arriving, or comes too slowly, keeps what came.
        let cut = match by {
            Some(by) => tokio::time::timeout_at(by, read).await.unwrap_or(true),
            None => read.await,
        };
        let mut text = String::from_utf8_lossy(&kept).into_owned();
        if cut {
            // A character split at the cap shows as U+FFFD; drop it.
            if text.ends_with('\u{FFFD}') {
                text.pop();
            }
            text.push_str("… [truncated]");
        }
        text
    })
}

/// The typed error for an HTTP error status, keeping the provider's body.
pub(crate) fn status_error(provider: &str, status: u16, reason: &str, body: &str) -> ModelError {
    let kind = match status {
        _ if is_context_overflow(body) => ModelErrorKind::ContextOverflow,
        401 | 403 => ModelErrorKind::Authentication,
        429 => ModelErrorKind::RateLimited,
        400 | 404 | 422 => ModelErrorKind::BadRequest,
        408 => ModelErrorKind::Timeout,
        500..=599 => ModelErrorKind::Server,
        _ => ModelErrorKind::Provider,
    };
    let body = body.trim();
    let message = if body.is_empty() {
        format!("{provider}: HTTP {status} {reason}")
    } else {
        format!("{provider}: HTTP {status} {reason}: {body}")
    };
    ModelError::new(kind, message).with_status(status)
}

fn stalled(provider: &str, limit: Duration) -> ModelError {
    ModelError::new(
        ModelErrorKind::Timeout,
        format!("{provider}: no data for {} ms (stalled)", limit.as_millis()),
    )
}

/// An attempt that ran past its total timeout, `total`.
fn overran(provider: &str, total: Duration) -> ModelError {
    ModelError::new(
        ModelErrorKind::Timeout,
        format!(
            "{provider}: the call ran past its total timeout of {} ms, from its request to the \
             end of its stream",
            total.as_millis()
        ),
    )
}

fn truncated(provider: &str) -> ModelError {
    ModelError::new(
        ModelErrorKind::StreamTruncated,
        format!("{provider}: the stream ended without its end marker (truncated)"),
    )
}

fn broken(provider: &str, error: &reqwest::Error) -> ModelError {
    ModelError::new(
        ModelErrorKind::Disconnected,
        format!(
            "{provider}: the connection broke mid-stream: {}",
            error_chain(error)
        ),
    )
}

/// The longest event a stream may send, in bytes: a server that sends more without ending
/// its event (a line that never ends, a broken proxy) fails the attempt as malformed, instead
/// of growing the framer's buffer without bound. Far above any real event: a streamed chunk
/// is a few hundred bytes, a whole tool call's arguments or an image a few megabytes.
const EVENT_LIMIT: usize = 32 * 1024 * 1024;

/// A stream whose event ran past [`EVENT_LIMIT`].
fn too_long(provider: &str, bytes: usize) -> ModelError {
    ModelError::new(
        ModelErrorKind::StreamMalformed,
        format!(
            "{provider}: malformed stream: an event ran past {} MiB ({bytes} bytes without its \
             end)",
            EVENT_LIMIT / (1024 * 1024)
        ),
    )
}

fn not_utf8(provider: &str) -> ModelError {
    ModelError::new(
        ModelErrorKind::StreamMalformed,
        format!("{provider}: malformed stream: an event that is not UTF-8"),
    )
}

/// An error with its sources, which is where reqwest keeps the useful part.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    // reqwest names the request's URL with its query, which may carry a gateway's key.
    if let Some(url) = error
        .downcast_ref::<reqwest::Error>()
        .and_then(reqwest::Error::url)
    {
        text = text.replace(url.as_str(), shown_url(url).as_str());
    }
    text
}

/// Removes the API key from an error message, should a server echo it.
fn redact(mut error: ModelError, key: Option<&ApiKey>) -> ModelError {
    if let Some(key) = key.map(ApiKey::expose).filter(|key| key.len() >= 4)
        && error.message.contains(key)
    {
        error.message = error.message.replace(key, "[redacted]");
    }
    error
}

/// Whether a `content-type` names an event stream (a media type is case-insensitive:
/// `Text/Event-Stream; charset=utf-8` is one).
fn is_event_stream(content_type: &str) -> bool {
    let stream = b"text/event-stream";
    content_type
        .as_bytes()
        .windows(stream.len())
        .any(|window| window.eq_ignore_ascii_case(stream))
}

/// The first-byte and idle timer of a call's reads, which also keeps the attempt's total
/// timeout: armed for whichever comes first, so the total timeout costs no timer of its own.
/// It is armed only when the body has nothing ready, so a burst of buffered bytes costs no
/// timer operations; each read returns (even one that completes no event, such as an SSE
/// comment used as a keep-alive), so the next wait re-arms it. Its `Sleep` is made on the
/// call's first wait and reused by the call's later ones.
#[derive(Default)]
struct Timer {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    armed: bool,
    /// When the attempt reading must end by: set as its response arrives.
    deadline: Option<Deadline>,
}

impl Timer {
    /// The stream's next item, or `None` when `limit` passes with no item arriving, or the
    /// attempt's deadline comes.
    fn poll_next<S: Stream + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        stream: &mut S,
        limit: Option<Duration>,
    ) -> Poll<Option<Option<S::Item>>> {
        if let Poll::Ready(item) = Pin::new(stream).poll_next(cx) {
            self.armed = false;
            return Poll::Ready(Some(item));
        }
        ready!(self.wait(cx, limit));
        Poll::Ready(None)
    }

    /// Why the timer fired, a read having waited `limit`: the attempt ran past its deadline,
    /// or the read stalled. Out of line, as [`wait`](Self::wait) is: inlined, the two made
    /// every poll of a call's stream run about 14 instructions more, most of them addresses
    /// the compiler hoisted out of its loop (`whole_turn_agent` in benches/stream.rs).
    #[cold]
    #[inline(never)]
    fn expired(&self, provider: &str, limit: Option<Duration>) -> ModelError {
        match self.deadline {
            Some(Deadline { at, total }) if Instant::now() >= at => overran(provider, total),
            _ => stalled(provider, limit.unwrap_or_default()),
        }
    }

    /// Ready when `limit`, or the attempt's deadline, has passed since this read began
    /// waiting: arms the timer on the read's first wait. Out of line (see
    /// [`expired`](Self::expired)): a read whose bytes are ready, most of them, runs none of it.
    #[inline(never)]
    fn wait(&mut self, cx: &mut Context<'_>, limit: Option<Duration>) -> Poll<()> {
        let sleep = match &mut self.sleep {
            // Armed by an earlier wait of this read: its deadline stands.
            Some(sleep) if self.armed => sleep,
            sleep => {
                // A limit past what an instant can hold (`Duration::MAX`, "never") never fires.
                let now = Instant::now();
                let total = self.deadline.map(|deadline| deadline.at);
                let deadline = match (limit.and_then(|limit| now.checked_add(limit)), total) {
                    (Some(idle), Some(deadline)) => idle.min(deadline),
                    (idle, deadline) => match idle.or(deadline) {
                        Some(deadline) => deadline,
                        None => return Poll::Pending,
                    },
                };
                self.armed = true;
                match sleep {
                    Some(sleep) => {
                        sleep.as_mut().reset(deadline);
                        sleep
                    }
                    None => sleep.insert(Box::pin(tokio::time::sleep_until(deadline))),
                }
            }
        };
        ready!(sleep.as_mut().poll(cx));
        self.armed = false;
        Poll::Ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HttpSettings;

    /// Two items at once, then nothing: a stream that stalls right after its first events.
    struct TwoThenSilence(u8);

    impl Stream for TwoThenSilence {
        type Item = u8;

        fn poll_next(mut self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<Option<u8>> {
            if self.0 < 2 {
                self.0 += 1;
                Poll::Ready(Some(self.0))
            } else {
                Poll::Pending
            }
        }
    }

    #[test]
    fn a_key_a_header_cannot_hold_fails_each_request_as_an_authentication_error() {
        let http = |key: &str| HttpRequest {
            url: reqwest::Url::parse("http://localhost/").unwrap(),
            headers: &[],
            auth: Some(Arc::new(AuthHeader::new(
                "authorization",
                "Bearer ",
                ApiKey::new(key),
            ))),
            body: bytes::Bytes::new(),
        };
        let client = reqwest::Client::new();
        let error = request(&client, "test", &http("bad\nkey")).unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::Authentication);
        assert!(!error.message.contains("bad"), "{}", error.message);
        let built = request(&client, "test", &http("good"))
            .unwrap()
            .build()
            .unwrap();
        let value = &built.headers()["authorization"];
        assert_eq!(value, "Bearer good");
        assert!(value.is_sensitive());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stall_after_the_first_events_ends_at_the_default_idle_timeout_not_twice_it() {
        let limit = HttpSettings::default().idle_timeout;
        assert_eq!(limit, Duration::from_secs(30));
        let mut stream = TwoThenSilence(0);
        let mut timer = Timer::default();
        for expected in [1, 2] {
            let item =
                std::future::poll_fn(|cx| timer.poll_next(cx, &mut stream, Some(limit))).await;
            assert_eq!(item, Some(Some(expected)));
        }
        let last_byte = tokio::time::Instant::now();
        let item = std::future::poll_fn(|cx| timer.poll_next(cx, &mut stream, Some(limit))).await;
        assert_eq!(item, None, "the idle timer fired");
        assert_eq!(last_byte.elapsed(), limit);
    }

    /// An item every `0.period()`.
    struct Ticks(tokio::time::Interval);

    impl Stream for Ticks {
        type Item = ();

        fn poll_next(
            mut self: Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> Poll<Option<()>> {
            self.0.poll_tick(cx).map(|_| Some(()))
        }
    }

    /// By default an attempt may take 10 minutes in all, as documented: a byte every 20 s,
    /// never the default idle timeout apart, is cut off 10 minutes after the attempt began,
    /// not later.
    #[tokio::test(start_paused = true)]
    async fn a_trickle_ends_at_the_default_total_timeout_not_later() {
        let defaults = HttpSettings::default();
        assert_eq!(defaults.total_timeout, Duration::from_secs(600));
        let start = Instant::now();
        let mut timer = Timer {
            deadline: Some(Deadline {
                at: start + defaults.total_timeout,
                total: defaults.total_timeout,
            }),
            ..Timer::default()
        };
        let first = start + Duration::from_secs(7);
        let mut ticks = Ticks(tokio::time::interval_at(first, Duration::from_secs(20)));
        let idle = Some(defaults.idle_timeout);
        let mut items = 0;
        let trickle = async {
            while std::future::poll_fn(|cx| timer.poll_next(cx, &mut ticks, idle))
                .await
                .is_some()
            {
                items += 1;
            }
        };
        let hour = Duration::from_secs(3600);
        assert!(
            tokio::time::timeout(hour, trickle).await.is_ok(),
            "still reading after an hour"
        );
        assert_eq!(start.elapsed(), defaults.total_timeout);
        // At 7 s, 27 s, ..., 587 s; the one due at 607 s comes too late.
        assert_eq!(items, 30);
    }

    /// A byte of a body, `b"x"`, every `0.period()`.
    struct TrickledBody(Ticks);

    impl Stream for TrickledBody {
        type Item = reqwest::Result<bytes::Bytes>;

        fn poll_next(
            mut self: Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> Poll<Option<Self::Item>> {
            let ticks = Pin::new(&mut self.0);
            ticks
                .poll_next(cx)
                .map(|tick| tick.map(|()| Ok(bytes::Bytes::from_static(b"x"))))
        }
    }

    /// An error body trickled a byte a second is read until the attempt's total timeout, at
    /// the default 10 minutes, when that comes before the first-byte timeout; else until the
    /// first-byte timeout (60 s by default) after the head. What came is kept, cut.
    #[tokio::test(start_paused = true)]
    async fn an_error_body_is_read_until_the_default_total_timeout_not_later() {
        let defaults = HttpSettings::default();
        let start = Instant::now();
        let deadline = Deadline {
            at: start + defaults.total_timeout,
            total: defaults.total_timeout,
        };
        let second = Duration::from_secs(1);
        let trickle = || {
            let first = Instant::now() + second / 2;
            TrickledBody(Ticks(tokio::time::interval_at(first, second)))
        };
        // The head came at 590 s: the body has 10 s left.
        tokio::time::advance(Duration::from_secs(590)).await;
        let by = body_by(defaults.first_byte_timeout, Some(deadline));
        let body = read_capped(trickle(), by, ERROR_BODY_LIMIT).await;
        assert_eq!(start.elapsed(), defaults.total_timeout);
        assert_eq!(body, format!("{}… [truncated]", "x".repeat(10)));
        // With no total timeout, the first-byte timeout bounds it.
        let head = Instant::now();
        let by = body_by(defaults.first_byte_timeout, None);
        let body = read_capped(trickle(), by, ERROR_BODY_LIMIT).await;
        assert_eq!(head.elapsed(), defaults.first_byte_timeout);
        assert_eq!(body, format!("{}… [truncated]", "x".repeat(60)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_limit_no_instant_can_hold_never_fires() {
        let mut stream = TwoThenSilence(0);
        let mut timer = Timer::default();
        let limit = Some(Duration::MAX);
        for expected in [1, 2] {
            let item = std::future::poll_fn(|cx| timer.poll_next(cx, &mut stream, limit)).await;
            assert_eq!(item, Some(Some(expected)));
        }
        let year = Duration::from_secs(365 * 24 * 3600);
        let next = std::future::poll_fn(|cx| timer.poll_next(cx, &mut stream, limit));
        assert!(
            tokio::time::timeout(year, next).await.is_err(),
            "still waiting after a year"
        );
    }

    #[test]
    fn an_event_stream_is_told_by_its_media_type_in_any_case() {
        for yes in [
            "text/event-stream",
            "Text/Event-Stream; charset=utf-8",
            "TEXT/EVENT-STREAM",
        ] {
            assert!(is_event_stream(yes), "{yes}");
        }
        for no in ["application/json", "text/html", "", "text/event"] {
            assert!(!is_event_stream(no), "{no}");
        }
    }

    #[test]
    fn a_finished_bodys_buffer_is_the_next_bodys_empty() {
        let transport = Transport::new(HttpSettings::default()).unwrap();
        let mut body = transport.buffer(16);
        body.extend_from_slice(br#"{"model":"m","messages":[]}"#);
        let (at, room) = (body.as_ptr(), body.capacity());
        transport.recycle(bytes::Bytes::from(body));
        let next = transport.buffer(4);
        assert!(next.is_empty());
        assert_eq!((next.as_ptr(), next.capacity()), (at, room));
        // Taken: a second call at the same time gets a buffer of its own.
        let other = transport.buffer(4);
        assert_ne!(other.as_ptr(), at);
    }

    #[test]
    fn a_body_still_held_elsewhere_or_too_large_is_not_kept() {
        let transport = Transport::new(HttpSettings::default()).unwrap();
        let body = bytes::Bytes::from(b"held".to_vec());
        let held = body.clone();
        transport.recycle(body);
        assert_eq!(transport.buffer(0).capacity(), 0);
        drop(held);
        let mut large = Vec::with_capacity(SPARE_LIMIT + 1);
        large.push(b'x');
        transport.recycle(bytes::Bytes::from(large));
        assert_eq!(transport.buffer(0).capacity(), 0);
        // Of two buffers back at once, the larger is kept.
        let small = Vec::with_capacity(64);
        let mut big = Vec::with_capacity(4096);
        big.push(b'x');
        let at = big.as_ptr();
        transport.recycle(bytes::Bytes::from(big));
        transport.recycle(bytes::Bytes::from(small));
        let kept = transport.buffer(0);
        assert_eq!(kept.as_ptr(), at);
    }
}
