//! LLM provider clients for agent-core, over HTTP and SSE: [`OpenAi`] (Chat Completions, and any
//! OpenAI-compatible server through its base URL) and [`Anthropic`] (Messages API).
//!
//! Both implement [`agent_core::Model`]. They stream text, reasoning and tool calls, and survive
//! what real APIs do: rate limits (honouring `Retry-After`), outages, and streams that stall,
//! break, end early or carry corrupt chunks. A stream without its provider's end marker is an
//! error, never a shorter answer; transient failures are retried with backoff, a broken stream
//! as a whole step. API keys never appear in `Debug` output, errors or traces.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod anthropic;
mod config;
mod drive;
mod json_keys;
mod openai;
mod retry;
mod sse;
mod tools_json;

pub use anthropic::Anthropic;
pub use config::{ApiKey, ConfigError, HttpSettings};
pub use openai::OpenAi;
