//! The size limit on a streamable-HTTP server's replies, said in words the model can act on.
//!
//! rmcp's HTTP client bounds each reply at 16 MiB: a JSON body over the limit is refused as it
//! is read, and an SSE event over it ends its stream. Either way the call fails at once and
//! the session goes on, but the model read rmcp's "HTTP response body exceeded the maximum
//! size of 16777216 bytes" for the one, and only "Transport closed" for the other. [`Bounded`]
//! is rmcp's reqwest client with such a reply's request answered by the error a stdio reply
//! over the limit gets (`too_large.rs`), so the call says the same on either transport, and
//! its client errors naming the URL without the query and credentials ([`url_shown`]).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use futures_core::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use rmcp_sse_stream::Sse;

use crate::too_large;

type Events = BoxStream<'static, Result<Sse, SseError>>;
type Posted = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

/// rmcp's reqwest client, a request whose reply is over the size limit answered with
/// [`too_large::answer`] (see the module doc).
#[derive(Clone)]
pub(crate) struct Bounded(reqwest::Client);

impl Bounded {
    /// A client as rmcp's default one: no idle connection kept, and only same-origin 307
    /// and 308 redirects followed (the others would lose the POST's body, or take the
    /// session's id to another server), up to 10.
    pub(crate) fn new() -> reqwest::Result<Bounded> {
        let redirect = reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > 10 {
                attempt.error("exceeded 10 redirects")
            } else {
                attempt.follow()
            }
        });
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(redirect)
            .build()?;
        Ok(Bounded(client))
    }
}

impl StreamableHttpClient for Bounded {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Posted {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Posted {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Posted {
        let id = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let posted = self
            .0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await
            .map_err(url_shown);
        // Only a request awaits a reply that could be too large.
        let Some(id) = id else {
            return posted;
        };
        match posted {
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                let answer = ServerJsonRpcMessage::error(too_large::answer(max_size), Some(id));
                Ok(StreamableHttpPostResponse::Json(answer, None))
            }
            Ok(StreamableHttpPostResponse::Sse(events, session)) => {
                let events = Answering {
                    events,
                    id: Some(id),
                    limit: limits.max_sse_event_size,
                };
                Ok(StreamableHttpPostResponse::Sse(Box::pin(events), session))
            }
            posted => posted,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<reqwest::Error>> {
        (self.0)
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
            .map_err(url_shown)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<reqwest::Error>> {
        (self.0)
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
            .map_err(url_shown)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<reqwest::Error>> {
        let stream = self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        stream.await.map_err(url_shown)
    }
}

/// A client error with its URL as an error shows it: without the query, fragment and
/// credentials, which may carry a key (reqwest names the URL in full: "error sending request
/// for url (...)"), as the providers show theirs.
fn url_shown(error: StreamableHttpError<reqwest::Error>) -> StreamableHttpError<reqwest::Error> {
    let StreamableHttpError::Client(mut error) = error else {
        return error;
    };
    if let Some(url) = error.url_mut() {
        url.set_query(None);
        url.set_fragment(None);
        // Only a URL that cannot have a host refuses these, and a request's URL has one.
        let _ = url.set_username("");
        let _ = url.set_password(None);
    }
    StreamableHttpError::Client(error)
}

/// The events of a request's SSE reply, an event over `limit` turned into the error that
/// answers the request.
struct Answering {
    events: Events,
    /// The request's id, until it is answered.
    id: Option<RequestId>,
    limit: usize,
}

impl Answering {
    /// Whether `error` is rmcp's for an event over the limit. Its type is private to rmcp,
    /// so it is told by its text (`oversized_http.rs` fails if that text changes).
    fn over_limit(&self, error: &SseError) -> bool {
        match error {
            SseError::Body(error) => {
                let said = error.to_string();
                said == format!(
                    "SSE event exceeded the maximum size of {} bytes",
                    self.limit
                )
            }
            _ => false,
        }
    }
}

impl Stream for Answering {
    type Item = Result<Sse, SseError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let event = ready!(this.events.as_mut().poll_next(cx));
        if let Some(Err(error)) = &event
            && this.over_limit(error)
            && let Some(id) = this.id.take()
        {
            let answer = ServerJsonRpcMessage::error(too_large::answer(this.limit), Some(id));
            // A JSON-RPC message serializes: its id and error are plain JSON.
            if let Ok(data) = serde_json::to_string(&answer) {
                let event = Sse {
                    data: Some(data),
                    ..Sse::default()
                };
                return Poll::Ready(Some(Ok(event)));
            }
        }
        Poll::Ready(event)
    }
}
