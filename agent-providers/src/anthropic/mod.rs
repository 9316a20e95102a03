//! Anthropic's Messages API (`POST /v1/messages`, streamed): the public client and its builder.
//! The request mapping is in `wire`, the stream decoding in `decode`.

mod decode;
mod frame;
mod wire;

use std::fmt;
use std::sync::{Arc, OnceLock};

use agent_core::{Model, ModelError, ModelErrorKind, ModelRequest, ModelStream};

use crate::config::{ApiKey, ConfigError, HttpSettings, env_var};
use crate::drive::{self, AuthHeader, Endpoint, HttpRequest, Transport, Wire, joined, split_query};
use crate::tools_json::ToolsJson;
use decode::AnthropicDecoder;

/// The API root used when none is given.
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The model used when none is given.
const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The output limit sent when a call sets none: the Messages API requires one.
const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The API version this client speaks (`anthropic-version`).
const API_VERSION: &str = "2023-06-01";

/// A client of Anthropic's Messages API, streaming over SSE. It implements [`Model`].
///
/// Text, thinking (as reasoning), tool calls, usage and stop reasons map onto the core's
/// events. The system prompt goes in the top-level `system`, with the conversation's system
/// messages (a compaction's summary) after it; tool results go back as `tool_result` blocks of
/// a user message. A conversation that would open with an assistant message (a compaction kept
/// the tail of a tool loop, or a hook trimmed the history) opens with a user message
/// `(Earlier messages are left out.)`, as the API wants the user's message first. A structured answer
/// ([`ModelRequest::output_schema`]) is asked for through a tool named after the schema, whose
/// input streams back as the answer's text. Provider options are merged into the top level of
/// the request body, where they win over the fields built from the request (all but `stream`):
/// for example `{"thinking": {"type": "enabled", "budget_tokens": 2048}}` or
/// `{"metadata": {"user_id": "..."}}`. A call's `seed` is ignored, as the API has none. Earlier
/// reasoning goes back as a signed `thinking` block (the signature is kept on the assistant
/// message) when thinking is on or the turn sets `send_reasoning`, as the API requires before a
/// `tool_use` it answers.
///
/// Usage reports all prompt tokens as input tokens, the ones read from the prompt cache also as
/// cached input tokens (Anthropic counts cache reads and writes apart from `input_tokens`).
///
/// Transient failures (connection errors, 408/409/429/5xx including 529 overloaded, streams
/// that break, stall or end without `message_stop`, and in-stream `overloaded_error`s) are
/// retried with backoff as [`HttpSettings`] says. The API key is never printed: not by `Debug`,
/// not in errors, not in traces.
///
/// ```no_run
/// use agent_providers::{Anthropic, HttpSettings};
///
/// let claude = Anthropic::new("sk-ant-...")
///     .model("claude-sonnet-4-5")
///     .max_tokens(8192)
///     .settings(HttpSettings { max_retries: 4, ..HttpSettings::default() });
/// let from_env = Anthropic::from_env()?; // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
/// # Ok::<(), agent_providers::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Anthropic {
    config: Arc<Config>,
    settings: HttpSettings,
    /// The HTTP client, made on first use (and again after [`Anthropic::settings`]).
    transport: OnceLock<Arc<Transport>>,
}

/// What every call of a client shares.
#[derive(Clone)]
struct Config {
    /// The API key's `x-api-key` header.
    auth: Arc<AuthHeader>,
    /// The API root, without a trailing `/` or `/v1` (its query, if any, kept at the end).
    base_url: String,
    /// `{base_url}/v1/messages`.
    endpoint: Endpoint,
    model: String,
    max_tokens: u32,
    /// The tools' JSON as last sent.
    tools: ToolsJson,
}

impl Anthropic {
    /// A client with this API key, talking to `https://api.anthropic.com` with model
    /// `claude-sonnet-4-5`, an output limit of 4096 tokens and the default [`HttpSettings`].
    pub fn new(api_key: impl Into<String>) -> Self {
        let base_url = root(DEFAULT_BASE_URL);
        Anthropic {
            config: Arc::new(Config {
                auth: Arc::new(AuthHeader::new("x-api-key", "", ApiKey::new(api_key))),
                endpoint: Endpoint::new(joined(&base_url, "/v1/messages")),
                base_url,
                model: DEFAULT_MODEL.to_owned(),
                max_tokens: DEFAULT_MAX_TOKENS,
                tools: ToolsJson::default(),
            }),
            settings: HttpSettings::default(),
            transport: OnceLock::new(),
        }
    }

    /// A client configured from the environment: `ANTHROPIC_API_KEY` (required) and
    /// `ANTHROPIC_BASE_URL` (optional, as for [`Anthropic::base_url`]). An empty variable counts
    /// as unset. A value that is not UTF-8, a base URL that is not http or https, or a key an
    /// HTTP header cannot carry (a line break), is a [`ConfigError`] naming the variable.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(env_var)
    }

    fn from_vars(
        var: impl Fn(&str) -> Result<Option<String>, ConfigError>,
    ) -> Result<Self, ConfigError> {
        let key = var("ANTHROPIC_API_KEY")?.ok_or_else(|| {
            ConfigError(
                "ANTHROPIC_API_KEY is not set: the Anthropic client needs an API key".to_owned(),
            )
        })?;
        let client = Anthropic::new(key);
        if let Some(error) = client.config.auth.unsendable("ANTHROPIC_API_KEY") {
            return Err(error);
        }
        let base_url = var("ANTHROPIC_BASE_URL")?;
        let client = match &base_url {
            Some(base_url) => client.base_url(base_url),
            None => client,
        };
        match (client.config.endpoint.invalid(), base_url) {
            (Some(why), Some(url)) => Err(ConfigError(format!(
                "ANTHROPIC_BASE_URL `{url}` is not an http or https URL: {why}"
            ))),
            _ => Ok(client),
        }
    }

    /// The API root (default `https://api.anthropic.com`); requests go to
    /// `{base_url}/v1/messages`. The root may be given with a trailing `/v1` too, as some
    /// gateways and proxies write it (`http://localhost:8080/v1`): it is not doubled. Trailing
    /// slashes do not matter. A query in it stays at the end
    /// (`https://gateway/anthropic?key=1` posts to `https://gateway/anthropic/v1/messages?key=1`).
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        let config = Arc::make_mut(&mut self.config);
        config.base_url = root(&base_url.into());
        config.endpoint = Endpoint::new(joined(&config.base_url, "/v1/messages"));
        self
    }

    /// The model asked for (default `claude-sonnet-4-5`), unless a request names another.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.config).model = model.into();
        self
    }

    /// The output limit (`max_tokens`) of calls whose settings give none (default 4096; the
    /// Messages API requires one).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        Arc::make_mut(&mut self.config).max_tokens = max_tokens;
        self
    }

    /// Timeouts and retries.
    pub fn settings(mut self, settings: HttpSettings) -> Self {
        self.settings = settings;
        self.transport = OnceLock::new();
        self
    }

    /// The HTTP client, made on first use.
    fn transport(&self) -> Result<Arc<Transport>, ModelError> {
        if let Some(transport) = self.transport.get() {
            return Ok(transport.clone());
        }
        let transport = Transport::new(self.settings.clone())
            .map(Arc::new)
            .map_err(|error| {
                ModelError::new(ModelErrorKind::Transport, format!("anthropic: {error}"))
            })?;
        // Two first calls may race: both clients work, one is kept.
        Ok(self.transport.get_or_init(|| transport).clone())
    }
}

impl fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Anthropic")
            .field("model", &self.config.model)
            .field("base_url", &self.config.base_url)
            .field("max_tokens", &self.config.max_tokens)
            .field("api_key", self.config.auth.key())
            .field("settings", &self.settings)
            .finish()
    }
}

impl Model for Anthropic {
    fn id(&self) -> &str {
        &self.config.model
    }

    fn supports_output_schema(&self) -> bool {
        true
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let transport = match self.transport() {
            Ok(transport) => transport,
            Err(error) => return drive::failed(error),
        };
        let call = Call {
            config: self.config.clone(),
            answer_tool: request
                .output_schema
                .as_ref()
                .map(|schema| schema.name.clone()),
        };
        drive::stream(transport, Arc::new(call), request)
    }
}

/// The wire format of one call (the decoder must know which tool carries a structured answer).
struct Call {
    config: Arc<Config>,
    answer_tool: Option<String>,
}

impl Wire for Call {
    type Decoder = AnthropicDecoder;

    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn request(&self, request: &ModelRequest, mut out: Vec<u8>) -> Result<HttpRequest, ModelError> {
        let config = &self.config;
        let body = wire::body(request, &config.model, config.max_tokens, &config.tools)?;
        serde_json::to_writer(&mut out, &body).map_err(wire::encode_error)?;
        Ok(HttpRequest {
            url: config.endpoint.url("anthropic")?,
            headers: &[
                ("anthropic-version", API_VERSION),
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
            ],
            auth: Some(config.auth.clone()),
            body: out.into(),
        })
    }

    fn decoder(&self) -> AnthropicDecoder {
        AnthropicDecoder::new(self.answer_tool.clone())
    }
}

/// The API root of a base URL: without surrounding spaces, trailing slashes, or a trailing
/// `/v1` (or `/v1/messages`), which the endpoint adds back.
fn root(base_url: &str) -> String {
    let base_url = base_url.trim();
    let (base, query) = split_query(base_url);
    let base = base.trim_end_matches('/');
    let base = base
        .strip_suffix("/messages")
        .filter(|rest| rest.ends_with("/v1"))
        .unwrap_or(base);
    format!("{}{query}", base.strip_suffix("/v1").unwrap_or(base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_url_may_end_in_v1_or_not() {
        for base in [
            "https://gateway.example/anthropic",
            "https://gateway.example/anthropic/",
            "https://gateway.example/anthropic/v1",
            "https://gateway.example/anthropic/v1/",
            "https://gateway.example/anthropic/v1/messages",
            " https://gateway.example/anthropic ",
        ] {
            let client = Anthropic::new("k").base_url(base);
            assert_eq!(
                client.config.endpoint.as_str(),
                "https://gateway.example/anthropic/v1/messages",
                "{base}"
            );
        }
        assert_eq!(
            Anthropic::new("k").config.endpoint.as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        // Only a whole trailing segment is taken off.
        assert_eq!(root("http://host/apiv1"), "http://host/apiv1");
        // A query stays at the end: the path goes before it.
        for base in [
            "https://gateway.example/a?key=1",
            "https://gateway.example/a/v1/?key=1",
        ] {
            assert_eq!(
                Anthropic::new("k").base_url(base).config.endpoint.as_str(),
                "https://gateway.example/a/v1/messages?key=1",
                "{base}"
            );
        }
    }

    #[test]
    fn from_the_environment() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                Ok(pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned()))
            }
        };
        let error = Anthropic::from_vars(vars(&[("ANTHROPIC_BASE_URL", "http://x")])).unwrap_err();
        assert!(error.to_string().contains("ANTHROPIC_API_KEY"), "{error}");
        let error = Anthropic::from_vars(vars(&[
            ("ANTHROPIC_API_KEY", "sk-ant-env-secret"),
            ("ANTHROPIC_BASE_URL", "ftp://x"),
        ]))
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "ANTHROPIC_BASE_URL `ftp://x` is not an http or https URL: its scheme `ftp` is not http or https"
        );
        let client =
            Anthropic::from_vars(vars(&[("ANTHROPIC_API_KEY", "sk-ant-env-secret")])).unwrap();
        assert_eq!(
            client.config.endpoint.as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(client.config.auth.key().expose(), "sk-ant-env-secret");
        let client = Anthropic::from_vars(vars(&[
            ("ANTHROPIC_API_KEY", "sk-ant-env-secret"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/v1/"),
        ]))
        .unwrap();
        assert_eq!(
            client.config.endpoint.as_str(),
            "http://127.0.0.1:9/v1/messages"
        );
        assert!(!format!("{client:?}").contains("sk-ant-env-secret"));
    }

    #[test]
    fn a_key_a_header_cannot_carry_is_refused_from_the_environment_without_showing_it() {
        let var = |name: &str| Ok((name == "ANTHROPIC_API_KEY").then(|| "sk-ant-1\n".to_owned()));
        let error = Anthropic::from_vars(var).unwrap_err();
        assert_eq!(
            error.0,
            "ANTHROPIC_API_KEY holds a character an HTTP header cannot carry (a line break, say): \
             check its value"
        );
    }

    #[test]
    fn builder_settings() {
        let client = Anthropic::new("k")
            .model("claude-haiku-4-5")
            .max_tokens(100);
        assert_eq!(client.id(), "claude-haiku-4-5");
        assert_eq!(client.config.max_tokens, 100);
        let copy = client.clone().model("other");
        assert_eq!(client.id(), "claude-haiku-4-5");
        assert_eq!(copy.id(), "other");
    }
}
