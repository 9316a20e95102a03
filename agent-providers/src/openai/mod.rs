//! OpenAI Chat Completions, and any OpenAI-compatible server through its base URL.

mod chunk;
mod decode;
mod strict;
mod wire;

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use agent_core::{Model, ModelError, ModelErrorKind, ModelRequest, ModelStream};
use serde_json::value::RawValue;

use crate::config::{ApiKey, ConfigError, HttpSettings, env_var};
use crate::drive::{self, AuthHeader, Endpoint, HttpRequest, Transport, Wire, joined};
use crate::tools_json::ToolsJson;
use decode::OpenAiDecoder;
use strict::strict_schema;
use wire::{Body, Tools};

/// The default base URL.
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The default model.
const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// An OpenAI Chat Completions client (`POST {base_url}/chat/completions`, streamed).
///
/// The base URL makes the same client serve any OpenAI-compatible server: Ollama, vLLM, the
/// llama.cpp server, Groq, OpenRouter. It streams text, reasoning (the `reasoning_content` or
/// `reasoning` deltas of compatible servers), tool calls and usage, and retries what is worth
/// retrying (see [`HttpSettings`]). The API key never appears in `Debug` output or errors.
///
/// ```no_run
/// use agent_providers::OpenAi;
/// # fn main() -> Result<(), agent_providers::ConfigError> {
/// // OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server).
/// let openai = OpenAi::from_env()?.model("gpt-4o");
/// // A local Ollama needs no key.
/// let ollama = OpenAi::new("").base_url("http://localhost:11434/v1").model("llama3.2");
/// # let _ = (openai, ollama);
/// # Ok(())
/// # }
/// ```
///
/// Request mapping: the system prompt is the first message; assistant tool calls and
/// `role: tool` results go back as Chat Completions expects; [`CallSettings`] map to
/// `temperature`, `max_completion_tokens`, `top_p`, `stop` and `seed`; an
/// [`OutputSchema`] becomes `response_format: {type: "json_schema", ...}`. Provider options are
/// merged into the body's top level: one that names a field the client sets replaces it, and a
/// `null` option removes the field (for a server that rejects it, such as `stream_options`).
/// A server that reads `max_tokens` rather than `max_completion_tokens` gets it with the
/// options `{"max_tokens": 512, "max_completion_tokens": null}`.
///
/// [`CallSettings`]: agent_core::CallSettings
/// [`OutputSchema`]: agent_core::OutputSchema
#[derive(Clone)]
pub struct OpenAi {
    wire: Arc<OpenAiWire>,
    settings: HttpSettings,
    /// Built on first use, so the builder methods stay infallible and cheap.
    transport: OnceLock<Result<Arc<Transport>, ConfigError>>,
}

/// What one request needs: where to send it and how to shape it.
#[derive(Clone)]
pub(crate) struct OpenAiWire {
    base_url: String,
    url: Endpoint,
    model: String,
    /// The API key's `Authorization` header, if there is a key.
    auth: Option<Arc<AuthHeader>>,
    strict_tools: bool,
    strict_output: bool,
    /// The tools' JSON as last sent.
    tools: ToolsJson,
}

impl fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAi")
            .field("base_url", &self.wire.base_url)
            .field("model", &self.wire.model)
            .field("api_key", &self.wire.auth.as_deref().map(AuthHeader::key))
            .field("strict_tools", &self.wire.strict_tools)
            .field("strict_output", &self.wire.strict_output)
            .field("settings", &self.settings)
            .finish()
    }
}

impl OpenAi {
    /// A client with this API key, the OpenAI API's base URL (`https://api.openai.com/v1`) and
    /// the model `gpt-4o-mini`. An empty key sends no `Authorization` header (local servers).
    pub fn new(api_key: impl Into<String>) -> Self {
        let key: String = api_key.into();
        let auth = (!key.trim().is_empty()).then(|| {
            Arc::new(AuthHeader::new(
                "authorization",
                "Bearer ",
                ApiKey::new(key),
            ))
        });
        OpenAi {
            wire: Arc::new(OpenAiWire {
                base_url: OPENAI_BASE_URL.to_owned(),
                url: Endpoint::new(chat_url(OPENAI_BASE_URL)),
                model: DEFAULT_MODEL.to_owned(),
                auth,
                strict_tools: false,
                strict_output: true,
                tools: ToolsJson::default(),
            }),
            settings: HttpSettings::default(),
            transport: OnceLock::new(),
        }
    }

    /// A client configured from the environment: `OPENAI_API_KEY`, and `OPENAI_BASE_URL` for an
    /// OpenAI-compatible server. The key is required unless the base URL points somewhere
    /// other than the OpenAI API (a local Ollama needs none). A value that is not UTF-8, a base
    /// URL that is not http or https, or a key an HTTP header cannot carry (a line break), is a
    /// [`ConfigError`] naming the variable.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(env_var("OPENAI_API_KEY")?, env_var("OPENAI_BASE_URL")?)
    }

    fn from_vars(key: Option<String>, base_url: Option<String>) -> Result<Self, ConfigError> {
        let elsewhere = base_url
            .as_deref()
            .is_some_and(|url| !url.contains("api.openai.com"));
        if key.is_none() && !elsewhere {
            return Err(ConfigError(
                "OPENAI_API_KEY is not set: set OPENAI_API_KEY, or set OPENAI_BASE_URL to an OpenAI-compatible \
                 server that needs no key (such as http://localhost:11434/v1 for Ollama)"
                    .to_owned(),
            ));
        }
        let client = OpenAi::new(key.unwrap_or_default());
        if let Some(error) = client
            .wire
            .auth
            .as_ref()
            .and_then(|auth| auth.unsendable("OPENAI_API_KEY"))
        {
            return Err(error);
        }
        let client = match &base_url {
            Some(url) => client.base_url(url),
            None => client,
        };
        match (client.wire.url.invalid(), base_url) {
            (Some(why), Some(url)) => Err(ConfigError(format!(
                "OPENAI_BASE_URL `{url}` is not an http or https URL: {why}"
            ))),
            _ => Ok(client),
        }
    }

    /// Sends requests to this base URL (`{base_url}/chat/completions`), such as
    /// `http://localhost:11434/v1` for Ollama or `https://openrouter.ai/api/v1`. A query in it
    /// stays at the end (`https://host/v1?api-version=1` posts to
    /// `https://host/v1/chat/completions?api-version=1`).
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        let base_url = base_url.into().trim().trim_end_matches('/').to_owned();
        let wire = Arc::make_mut(&mut self.wire);
        wire.url = Endpoint::new(chat_url(&base_url));
        wire.base_url = base_url;
        self
    }

    /// Uses this model (a request's own non-empty `model` overrides it).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.wire).model = model.into();
        self
    }

    /// Timeouts and retries.
    pub fn settings(mut self, settings: HttpSettings) -> Self {
        self.settings = settings;
        self.transport = OnceLock::new();
        self
    }

    /// Sends tools in strict mode (`strict: true`, default off), their schemas adapted: every
    /// property required and optional ones nullable, `additionalProperties: false`. A schema
    /// strict mode cannot express fails the call with an error naming the keyword and its JSON
    /// path. The model may then send `null` for a parameter it could omit before: `Option<T>`
    /// reads it as `None`, and a typed tool's field that may be left out (an `#[arg(default =
    /// ...)]` parameter of `#[tool]`, a `#[serde(default)]` field at any depth) as left out,
    /// taking its default.
    pub fn strict_tools(mut self, strict: bool) -> Self {
        Arc::make_mut(&mut self.wire).strict_tools = strict;
        self
    }

    /// Asks for structured output in strict mode (default on), its schema adapted as for
    /// [`strict_tools`](Self::strict_tools). Off, the schema is sent as it is, with
    /// `strict: false`.
    pub fn strict_output(mut self, strict: bool) -> Self {
        Arc::make_mut(&mut self.wire).strict_output = strict;
        self
    }

    fn transport(&self) -> Result<Arc<Transport>, ConfigError> {
        self.transport
            .get_or_init(|| Transport::new(self.settings.clone()).map(Arc::new))
            .clone()
    }
}

impl Model for OpenAi {
    fn id(&self) -> &str {
        &self.wire.model
    }

    fn supports_output_schema(&self) -> bool {
        true
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        match self.transport() {
            Ok(transport) => drive::stream(transport, self.wire.clone(), request),
            Err(error) => drive::failed(ModelError::new(
                ModelErrorKind::Transport,
                format!("openai: {error}"),
            )),
        }
    }
}

impl Wire for OpenAiWire {
    type Decoder = OpenAiDecoder;

    fn name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn request(&self, request: &ModelRequest, mut out: Vec<u8>) -> Result<HttpRequest, ModelError> {
        let model = if request.model.is_empty() {
            &self.model
        } else {
            &request.model
        };
        let tools = if request.tools.is_empty() {
            None
        } else {
            let write = || self.write_tools(request);
            Some(self.tools.get(&request.tools, self.strict_tools, write)?)
        };
        let output = match &request.output_schema {
            None => None,
            Some(output) if !self.strict_output => {
                Some((output.name.as_str(), Cow::Borrowed(&*output.schema)))
            }
            Some(output) => {
                let schema = strict_schema(&output.schema).map_err(|error| {
                    bad_request(format!(
                        "openai: the output schema `{}` cannot be sent in strict mode: {error}",
                        output.name
                    ))
                })?;
                Some((output.name.as_str(), Cow::Owned(schema)))
            }
        };
        let body = Body {
            model,
            request,
            tools: tools.as_ref().map(|tools| &*tools.json),
            output,
            strict_output: self.strict_output,
        };
        serde_json::to_writer(&mut out, &body).map_err(encode_error)?;
        Ok(HttpRequest {
            url: self.url.url("openai")?,
            headers: &[
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
            ],
            auth: self.auth.clone(),
            body: out.into(),
        })
    }

    fn decoder(&self) -> OpenAiDecoder {
        OpenAiDecoder::default()
    }
}

/// `schema`, given an empty `properties` when it is an object schema without one: OpenAI
/// refuses those ("object schema missing properties"), and they are what a tool without
/// parameters often has (an MCP server's, or a hand-written `{"type": "object"}`).
fn with_properties(schema: &serde_json::Value) -> Cow<'_, serde_json::Value> {
    match schema {
        serde_json::Value::Object(map)
            if map.get("type").and_then(serde_json::Value::as_str) == Some("object")
                && !map.contains_key("properties") =>
        {
            let mut map = map.clone();
            map.insert("properties".to_owned(), serde_json::json!({}));
            Cow::Owned(serde_json::Value::Object(map))
        }
        _ => Cow::Borrowed(schema),
    }
}

impl OpenAiWire {
    /// The request's tools as the body's `tools` array, their schemas adapted to strict mode
    /// when it is on.
    fn write_tools(&self, request: &ModelRequest) -> Result<Box<RawValue>, ModelError> {
        let parameters = request
            .tools
            .iter()
            .map(|tool| {
                if !self.strict_tools {
                    return Ok(with_properties(&tool.parameters));
                }
                strict_schema(&tool.parameters)
                    .map(Cow::Owned)
                    .map_err(|error| {
                        bad_request(format!(
                            "openai: the tool `{}` cannot be sent in strict mode: {error}",
                            tool.name
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tools = Tools {
            specs: &request.tools,
            parameters: &parameters,
            strict: self.strict_tools,
        };
        serde_json::value::to_raw_value(&tools).map_err(encode_error)
    }
}

fn chat_url(base_url: &str) -> String {
    joined(base_url, "/chat/completions")
}

fn encode_error(error: serde_json::Error) -> ModelError {
    ModelError::new(
        ModelErrorKind::Other,
        format!("openai: cannot encode the request: {error}"),
    )
}

fn bad_request(message: String) -> ModelError {
    ModelError::new(ModelErrorKind::BadRequest, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variable that is set but not UTF-8 is an error naming it, not taken for unset: a base
    /// URL taken for unset would send the key to the OpenAI API. Checked in a child process of
    /// this test binary, whose environment holds such a value.
    #[cfg(unix)]
    #[test]
    fn a_variable_that_is_not_utf8_is_an_error_naming_it() {
        use std::os::unix::ffi::OsStringExt;
        const CHILD: &str = "AGENT_PROVIDERS_FROM_ENV_CHILD";
        if std::env::var_os(CHILD).is_some() {
            match OpenAi::from_env() {
                Ok(client) => println!("RESULT ok, base URL {}", client.wire.base_url),
                Err(error) => println!("RESULT error: {error}"),
            }
            return;
        }
        let base_url = std::ffi::OsString::from_vec(b"http://localhost:8080/v\xff1".to_vec());
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "openai::tests::a_variable_that_is_not_utf8_is_an_error_naming_it",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .env("OPENAI_API_KEY", "sk-test-123")
            .env("OPENAI_BASE_URL", base_url)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let result = stdout.lines().find(|line| line.starts_with("RESULT"));
        assert_eq!(
            result,
            Some("RESULT error: OPENAI_BASE_URL is set but is not UTF-8: check its value"),
            "{stdout}"
        );
    }

    #[test]
    fn the_key_is_required_only_for_the_openai_api() {
        let error = OpenAi::from_vars(None, None).unwrap_err();
        assert!(
            error.0.contains("OPENAI_API_KEY") && error.0.contains("OPENAI_BASE_URL"),
            "{error}"
        );
        assert!(OpenAi::from_vars(None, Some("https://api.openai.com/v1".to_owned())).is_err());
        let ollama =
            OpenAi::from_vars(None, Some("http://localhost:11434/v1/".to_owned())).unwrap();
        assert_eq!(
            ollama.wire.url.as_str(),
            "http://localhost:11434/v1/chat/completions"
        );
        assert!(ollama.wire.auth.is_none());
        let openai = OpenAi::from_vars(Some("sk-test-123".to_owned()), None).unwrap();
        assert_eq!(
            openai.wire.url.as_str(),
            "https://api.openai.com/v1/chat/completions"
        );
        assert!(!format!("{openai:?}").contains("sk-test-123"));
    }

    #[test]
    fn a_query_in_the_base_url_stays_at_the_end() {
        for base in [
            "https://res.example/openai/deployments/d?api-version=2024-10-21",
            "https://res.example/openai/deployments/d/?api-version=2024-10-21",
        ] {
            assert_eq!(
                OpenAi::new("k").base_url(base).wire.url.as_str(),
                "https://res.example/openai/deployments/d/chat/completions?api-version=2024-10-21",
                "{base}"
            );
        }
    }

    #[test]
    fn a_key_a_header_cannot_carry_is_refused_from_the_environment_without_showing_it() {
        let error = OpenAi::from_vars(Some("sk-test-123\r\n".to_owned()), None).unwrap_err();
        assert_eq!(
            error.0,
            "OPENAI_API_KEY holds a character an HTTP header cannot carry (a line break, say): \
             check its value"
        );
    }

    #[test]
    fn a_base_url_that_cannot_be_sent_to_is_refused_from_the_environment() {
        let key = || Some("sk-test-123".to_owned());
        let error = OpenAi::from_vars(key(), Some("notaurl".to_owned())).unwrap_err();
        assert_eq!(
            error.0,
            "OPENAI_BASE_URL `notaurl` is not an http or https URL: relative URL without a base"
        );
        let error = OpenAi::from_vars(key(), Some("ftp://x/v1".to_owned())).unwrap_err();
        assert!(
            error.0.contains("its scheme `ftp` is not http or https"),
            "{error}"
        );
    }
}
