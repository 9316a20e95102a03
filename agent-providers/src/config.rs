//! Settings every provider shares: the API key (never printed), timeouts and retries.

use std::fmt;
use std::time::Duration;

/// An API key. Its `Debug` and `Display` print `[redacted]`, so it cannot leak into logs,
/// error messages or traces.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for the request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Timeouts and retries of a provider client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// Time allowed to open the connection (default 10 s).
    pub connect_timeout: Duration,
    /// Time allowed from sending the request to the response headers and again to the first
    /// event of the stream (default 60 s).
    pub first_byte_timeout: Duration,
    /// Time allowed between two events of a stream (default 30 s; zero turns it off). A turn
    /// overrides it with `TurnConfig::stall_timeout`.
    pub idle_timeout: Duration,
    /// Time allowed for one attempt of a model call, from sending its request to the end of
    /// its stream (default 10 minutes, the request timeout of OpenAI's and Anthropic's own
    /// SDKs; zero turns it off): a server trickling a byte now and then, never the idle
    /// timeout apart, cannot hold a call forever. Running out of it is a
    /// [`ModelErrorKind::Timeout`](agent_core::ModelErrorKind::Timeout), retried as the idle
    /// and first-byte timeouts are (up to `max_retries`, each attempt with a deadline of its
    /// own). Raise it for calls that stream longer, such as long reasoning. It bounds the
    /// reading of an error response's body too: a body still coming when it runs out is kept
    /// in the error as far as it came, ending in `… [truncated]`.
    pub total_timeout: Duration,
    /// How many times a transient failure is retried (default 2).
    pub max_retries: u32,
    /// The first backoff; each retry doubles it, with full jitter (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest backoff, and the longest `Retry-After` honoured (default 30 s).
    pub max_backoff: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(600),
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// A required setting is missing from the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Reads an environment variable, treating an empty value as unset. A value that is not
/// UTF-8 is an error naming the variable: it is set, and taking it for unset would go on
/// without it (a base URL left out sends the key to the provider's own API).
pub(crate) fn env_var(name: &str) -> Result<Option<String>, ConfigError> {
    match std::env::var(name) {
        Ok(value) => Ok(Some(value).filter(|value| !value.trim().is_empty())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(ConfigError(format!(
            "{name} is set but is not UTF-8: check its value"
        ))),
    }
}
