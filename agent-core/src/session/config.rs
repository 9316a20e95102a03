//! What `configure_session` builds: context blocks, compaction settings and the token counter.

use crate::hooks::RunHooks;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::message::Message;
use crate::util::BoxFuture;
use crate::util::{catch_panic, catch_unwind};

/// The session a configuration is built for (what context providers receive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// The agent's name.
    pub agent: String,
    /// The session id.
    pub session: String,
}

type SyncProvider = Arc<dyn Fn(&SessionInfo) -> String + Send + Sync>;
type AsyncProvider =
    Arc<dyn Fn(SessionInfo) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// Where a context block's text comes from; called once per session open.
#[derive(Clone)]
pub enum ContextProvider {
    /// A plain function.
    Sync(SyncProvider),
    /// An async function; an error fails the session open (and so the turn).
    Async(AsyncProvider),
}

impl ContextProvider {
    /// A provider from a plain function.
    pub fn sync<S: Into<String>>(
        provider: impl Fn(&SessionInfo) -> S + Send + Sync + 'static,
    ) -> Self {
        ContextProvider::Sync(Arc::new(move |info| provider(info).into()))
    }

    /// A provider from an async function.
    pub fn future<F>(provider: impl Fn(SessionInfo) -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = Result<String, String>> + Send + 'static,
    {
        ContextProvider::Async(Arc::new(move |info| Box::pin(provider(info))))
    }

    /// The block's text for this session; a panicking provider is an error with its message.
    pub(crate) async fn text(&self, info: &SessionInfo) -> Result<String, String> {
        let panicked = |message: String| format!("it panicked: {message}");
        match self {
            ContextProvider::Sync(provider) => catch_panic(|| provider(info)).map_err(panicked),
            ContextProvider::Async(provider) => {
                let future = catch_panic(|| provider(info.clone())).map_err(panicked)?;
                catch_unwind(future).await.map_err(panicked)?
            }
        }
    }
}

impl fmt::Debug for ContextProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContextProvider::Sync(_) => "ContextProvider::Sync",
            ContextProvider::Async(_) => "ContextProvider::Async",
        })
    }
}

/// A named part of the system prompt, with an optional token budget that truncates it.
#[derive(Clone, Debug)]
pub struct ContextBlock {
    /// The block's name (its heading in the system prompt).
    pub name: String,
    /// Where its text comes from.
    pub provider: ContextProvider,
    /// The most tokens (by the session's token counter) the block may take.
    pub max_tokens: Option<usize>,
}

impl ContextBlock {
    /// A block without a budget.
    pub fn new(name: impl Into<String>, provider: ContextProvider) -> Self {
        ContextBlock {
            name: name.into(),
            provider,
            max_tokens: None,
        }
    }

    /// Truncates the block's text to this many tokens.
    pub fn max_tokens(mut self, max_tokens: usize) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }
}

/// Counts the tokens of a message (an estimate is fine: it drives thresholds and budgets).
pub type TokenCounter = Arc<dyn Fn(&Message) -> usize + Send + Sync>;

/// Turns the oldest messages of a history into one summary text (for example by calling a
/// model). An error leaves the history as it was.
pub type Summarizer =
    Arc<dyn Fn(Vec<Message>) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// The default token counter: a message's text length in characters, divided by 4.
pub fn default_token_counter(message: &Message) -> usize {
    let chars = match message {
        Message::System { content } | Message::User { content } => content.chars().count(),
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
            ..
        } => {
            content.chars().count()
                + reasoning.chars().count()
                + tool_calls
                    .iter()
                    .map(|call| call.name.chars().count() + call.arguments.chars().count())
                    .sum::<usize>()
        }
        Message::Tool { name, content, .. } => name.chars().count() + content.chars().count(),
    };
    chars.div_ceil(4)
}

/// A session's configuration, built by the closure given to
/// [`AgentBuilder::configure_session`](crate::AgentBuilder::configure_session) once per session
/// open.
///
/// ```
/// use agent_core::SessionConfig;
/// let config = SessionConfig::default()
///     .context("soul", |_| "You are a helpful assistant.")
///     .context_with_budget("memory", 1100, |_| "Likes tea.")
///     .compact_after(100_000, |messages| async move { Ok(format!("{} messages", messages.len())) })
///     .max_input_tokens(200_000)
///     .headroom(0.8);
/// assert_eq!(config.blocks().len(), 2);
/// ```
#[derive(Clone)]
pub struct SessionConfig {
    pub(crate) blocks: Vec<ContextBlock>,
    pub(crate) summarizer: Option<Summarizer>,
    pub(crate) compact_after: Option<usize>,
    pub(crate) counter: TokenCounter,
    pub(crate) max_input_tokens: Option<u64>,
    pub(crate) headroom: f64,
    pub(crate) max_compactions: usize,
    pub(crate) keep_recent: usize,
    pub(crate) reactive: bool,
    pub(crate) run_hooks: Vec<Arc<dyn RunHooks>>,
    pub(crate) extensions: Vec<crate::hooks::Extension>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            blocks: Vec::new(),
            summarizer: None,
            compact_after: None,
            counter: Arc::new(default_token_counter),
            max_input_tokens: None,
            headroom: 0.8,
            max_compactions: 1,
            keep_recent: 4,
            reactive: true,
            run_hooks: Vec::new(),
            extensions: Vec::new(),
        }
    }
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("blocks", &self.blocks)
            .field("summarizer", &self.summarizer.is_some())
            .field("compact_after", &self.compact_after)
            .field("max_input_tokens", &self.max_input_tokens)
            .field("headroom", &self.headroom)
            .field("max_compactions", &self.max_compactions)
            .field("keep_recent", &self.keep_recent)
            .field("reactive", &self.reactive)
            .finish()
    }
}

impl SessionConfig {
    /// Adds a context block whose text a plain function gives.
    pub fn context<S: Into<String>>(
        self,
        name: impl Into<String>,
        provider: impl Fn(&SessionInfo) -> S + Send + Sync + 'static,
    ) -> Self {
        self.block(ContextBlock::new(name, ContextProvider::sync(provider)))
    }

    /// Adds a context block truncated to `max_tokens` tokens.
    pub fn context_with_budget<S: Into<String>>(
        self,
        name: impl Into<String>,
        max_tokens: usize,
        provider: impl Fn(&SessionInfo) -> S + Send + Sync + 'static,
    ) -> Self {
        self.block(ContextBlock::new(name, ContextProvider::sync(provider)).max_tokens(max_tokens))
    }

    /// Adds a context block whose text an async function gives; its error fails the open.
    pub fn context_async<F>(
        self,
        name: impl Into<String>,
        provider: impl Fn(SessionInfo) -> F + Send + Sync + 'static,
    ) -> Self
    where
        F: Future<Output = Result<String, String>> + Send + 'static,
    {
        self.block(ContextBlock::new(name, ContextProvider::future(provider)))
    }

    /// Adds a context block.
    pub fn block(mut self, block: ContextBlock) -> Self {
        self.blocks.push(block);
        self
    }

    /// Compacts the history before a step when its messages count more than `threshold`
    /// tokens, summarizing the oldest ones with `summarizer`.
    pub fn compact_after<F>(
        mut self,
        threshold: usize,
        summarizer: impl Fn(Vec<Message>) -> F + Send + Sync + 'static,
    ) -> Self
    where
        F: Future<Output = Result<String, String>> + Send + 'static,
    {
        self.compact_after = Some(threshold);
        self.summarize_with(summarizer)
    }

    /// The summarizer compaction uses, without a token threshold (compaction then runs on a
    /// context overflow, or past [`max_input_tokens`](Self::max_input_tokens)).
    pub fn summarize_with<F>(
        mut self,
        summarizer: impl Fn(Vec<Message>) -> F + Send + Sync + 'static,
    ) -> Self
    where
        F: Future<Output = Result<String, String>> + Send + 'static,
    {
        self.summarizer = Some(Arc::new(move |messages| Box::pin(summarizer(messages))));
        self
    }

    /// How tokens are counted (default: [`default_token_counter`]).
    pub fn token_counter(
        mut self,
        counter: impl Fn(&Message) -> usize + Send + Sync + 'static,
    ) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// The model's input limit: a step compacts first when the last step's reported input
    /// tokens passed `max_input_tokens * headroom`. Before the first model call of a session
    /// opened in this process (after a restart, say) or compacted since, no input was reported:
    /// the history as the [`token_counter`](Self::token_counter) counts it stands in.
    pub fn max_input_tokens(mut self, max_input_tokens: u64) -> Self {
        self.max_input_tokens = Some(max_input_tokens);
        self
    }

    /// The share of [`max_input_tokens`](Self::max_input_tokens) past which a step compacts
    /// first (default 0.8): above 0 and at most 1, else the session's turns fail, saying so.
    pub fn headroom(mut self, headroom: f64) -> Self {
        self.headroom = headroom;
        self
    }

    /// Adds observers of every turn of the session across the agents it reaches (see
    /// [`RunHooks`]), beside any the turn's request brings.
    pub fn run_hooks(mut self, hooks: impl RunHooks) -> Self {
        self.run_hooks.push(Arc::new(hooks));
        self
    }

    /// Adds a subscriber to JSON snapshots of every turn of the session (see
    /// [`Extension`](crate::Extension)), after the agent's own extensions. One that could never
    /// run (a zero timeout, chunk types that select no chunk) fails the session's turns, saying
    /// so, as the builder refuses it for the agent's own.
    pub fn extension(mut self, extension: crate::hooks::Extension) -> Self {
        self.extensions.push(extension);
        self
    }

    /// How many times a turn compacts before its steps (default 1). A context-overflow
    /// recovery does not count.
    pub fn max_compactions(mut self, max_compactions: usize) -> Self {
        self.max_compactions = max_compactions;
        self
    }

    /// How many of the most recent messages compaction keeps (default 4, at least 1); more are
    /// kept when the cut would separate a tool call from its result.
    pub fn keep_recent(mut self, keep_recent: usize) -> Self {
        self.keep_recent = keep_recent.max(1);
        self
    }

    /// Whether a turn that fails with a context overflow compacts and retries once (default
    /// true; it needs a summarizer).
    pub fn reactive(mut self, reactive: bool) -> Self {
        self.reactive = reactive;
        self
    }

    /// The context blocks, in order.
    pub fn blocks(&self) -> &[ContextBlock] {
        &self.blocks
    }

    /// Counts a message's tokens with the session's counter.
    pub fn count(&self, message: &Message) -> usize {
        (self.counter)(message)
    }
}
